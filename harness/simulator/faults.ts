// Fault injection: a FIFO queue of one-shot faults, each consumed by the next
// effectful POST it matches, plus cancellable delays so close()/reset never wait
// on a fault's timer.
import { z } from 'zod';

export const FAULT_KINDS = [
  'fail_before_commit', // nothing stored, socket destroyed without a response
  'drop_after_commit', // stored, socket destroyed without a response
  'delay_after_commit', // stored, response sent after delayMs
  'delay_before_commit', // wait delayMs (idempotency key in flight), then proceed
  'status_500_after_commit', // stored, answered 500
  'status_503_before_commit', // nothing stored, answered 503 + Retry-After
  'status_429_before_commit', // nothing stored, answered 429 (rate limited) + Retry-After
  'status_422_before_commit', // nothing stored, answered 422: a definitive refusal (the key-less feed has no other)
  'read_error_500', // a read (GET on /v1 or /social/v1) answered 500: readback must retry
] as const;

/** Faults consumed by reads (GETs) rather than by effectful POSTs. */
export function isReadFault(kind: FaultKind): boolean {
  return kind === 'read_error_500';
}

export type FaultKind = (typeof FAULT_KINDS)[number];

export const DEFAULT_FAULT_DELAY_MS = 5000;

export const faultRequestSchema = z
  .object({
    kind: z.enum(FAULT_KINDS),
    path: z.string().startsWith('/', 'path must start with "/"').optional(),
    delayMs: z.number().int().min(0).max(600_000).optional(),
    count: z.number().int().min(1).max(10_000).default(1),
    /** Only a request carrying this reference (its Idempotency-Key, or the effect ID stamped in its body). */
    reference: z.string().min(1).max(300).optional(),
    /** After a commit, others post this many times on the feed before any answer: ours is out of its listing. */
    crowd: z.number().int().min(1).max(10_000).optional(),
  })
  .strict();

export type FaultRequest = z.infer<typeof faultRequestSchema>;

export interface Fault {
  kind: FaultKind;
  /** Path prefix the fault applies to; null = any effectful POST. */
  path: string | null;
  /** The reference a request must carry; null = any request. */
  reference: string | null;
  delayMs: number;
  /** Others' posts made right after the commit, before any answer (0: none). */
  crowd: number;
}

export class FaultQueue {
  readonly #queue: Fault[] = [];

  /** Queue `count` copies; returns what was queued. */
  add(request: FaultRequest): Fault[] {
    const fault: Fault = {
      kind: request.kind,
      path: request.path ?? null,
      reference: request.reference ?? null,
      delayMs: request.delayMs ?? DEFAULT_FAULT_DELAY_MS,
      crowd: request.crowd ?? 0,
    };
    const added = Array.from({ length: request.count }, () => ({ ...fault }));
    this.#queue.push(...added);
    return added;
  }

  /** Remove and return the oldest fault matching `path` (and the kind of request, and its references), if any. */
  take(path: string, read = false, references: readonly string[] = []): Fault | undefined {
    const index = this.#queue.findIndex(
      (f) =>
        isReadFault(f.kind) === read &&
        (f.path === null || path.startsWith(f.path)) &&
        (f.reference === null || references.includes(f.reference)),
    );
    return index === -1 ? undefined : this.#queue.splice(index, 1)[0];
  }

  /** Whether a queued fault waits for a particular reference (then a request's body is read before a fault is taken). */
  hasReferenced(): boolean {
    return this.#queue.some((f) => f.reference !== null);
  }

  list(): Fault[] {
    return this.#queue.map((f) => ({ ...f }));
  }

  clear(): number {
    return this.#queue.splice(0).length;
  }
}

export class DelayCancelledError extends Error {
  constructor() {
    super('delay cancelled because the simulator was reset or closed');
  }
}

/**
 * Timers behind fault delays, tracked so they can be cancelled instead of awaited, or ended early: a
 * test that holds an answer back releases it when it is ready instead of betting on a window.
 */
export class Delays {
  readonly #pending = new Map<NodeJS.Timeout, { resolve: () => void; reject: () => void }>();

  wait(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(timer);
        resolve();
      }, ms);
      timer.unref(); // a pending fault must never keep the process alive on its own
      this.#pending.set(timer, { resolve, reject: () => reject(new DelayCancelledError()) });
    });
  }

  /** Ends every pending delay now, as if it had run out; returns how many there were. */
  releaseAll(): number {
    const released = this.#pending.size;
    for (const [timer, { resolve }] of this.#pending) {
      clearTimeout(timer);
      resolve();
    }
    this.#pending.clear();
    return released;
  }

  get size(): number {
    return this.#pending.size;
  }

  cancelAll(): void {
    for (const [timer, { reject }] of this.#pending) {
      clearTimeout(timer);
      reject();
    }
    this.#pending.clear();
  }
}
