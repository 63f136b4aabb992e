// The provider's rate limit and its traffic counter. A provider that is just recovering answers 429 with
// Retry-After above R requests a second (fixed one-second windows, as most providers document theirs); the
// counter keeps, per second, what arrived and what was limited, so a scenario reads the readback rate the
// provider saw — its own view, not ours.
import { z } from 'zod';

export const rateLimitSchema = z
  .object({
    /** Requests per second to the provider's API (control requests never count); null lifts the limit. */
    requestsPerSecond: z.number().int().min(1).max(1_000_000).nullable(),
    /** What a limited request's Retry-After says (default 1 s). */
    retryAfterSeconds: z.number().int().min(1).max(3600).optional(),
  })
  .strict();

export type RateLimitSetting = z.infer<typeof rateLimitSchema>;

/** What the counter groups requests by: reads (GET) and writes (anything else), per API. */
export type TrafficKind = 'read' | 'write';

export interface TrafficSecond {
  /** The second's start, in epoch milliseconds. */
  at: number;
  reads: number;
  writes: number;
  /** Requests answered 429 by the rate limit (counted in reads or writes as well). */
  limited: number;
  /** Reads per API path prefix (`/v1/idempotency_keys`, `/v1/objects`, `/social/v1/posts`). */
  readsByPath: Record<string, number>;
}

export interface TrafficReport {
  limit: { requestsPerSecond: number | null; retryAfterSeconds: number };
  totals: { reads: number; writes: number; limited: number };
  /** Seconds with any traffic, oldest first (the newest 3,600 are kept). */
  seconds: TrafficSecond[];
}

const KEPT_SECONDS = 3600;

/** Where each of the simulator's destinations lives: the keyed API under /v1, the key-less feed under /social. */
export const SIMULATED_DESTINATION_PATHS: Readonly<Record<string, string>> = {
  'keyed-api': '/v1/',
  'social-feed': '/social/',
};

/** The reads one second saw at a destination's paths (every GET a readback makes: a key, an object, a page). */
export function readsAt(second: Pick<TrafficSecond, 'readsByPath'>, destination: string): number {
  const prefix = SIMULATED_DESTINATION_PATHS[destination];
  if (!prefix) return 0;
  return Object.entries(second.readsByPath)
    .filter(([group]) => `${group}/`.startsWith(prefix))
    .reduce((n, [, reads]) => n + reads, 0);
}

/** The first two segments of a path (three under /social): `/v1/objects/obj_1` → `/v1/objects`. */
export function pathGroup(path: string): string {
  const parts = path.split('/').filter(Boolean);
  return `/${parts.slice(0, parts[0] === 'social' ? 3 : 2).join('/')}`;
}

export class Traffic {
  #limit: number | null = null;
  #retryAfterSeconds = 1;
  #windowStart = 0;
  #windowCount = 0;
  readonly #seconds = new Map<number, TrafficSecond>();
  readonly #totals = { reads: 0, writes: 0, limited: 0 };

  set({ requestsPerSecond, retryAfterSeconds }: RateLimitSetting): void {
    this.#limit = requestsPerSecond;
    this.#retryAfterSeconds = retryAfterSeconds ?? 1;
  }

  /**
   * Counts a request to the API; answers the Retry-After (seconds) when it is over the limit, else null.
   * A limited request takes no slot of its window: a client that keeps knocking is refused, not queued.
   */
  admit(method: string, path: string, now = Date.now()): number | null {
    const kind: TrafficKind = method === 'GET' ? 'read' : 'write';
    const second = this.#second(now);
    if (kind === 'read') {
      second.reads++;
      const group = pathGroup(path);
      second.readsByPath[group] = (second.readsByPath[group] ?? 0) + 1;
      this.#totals.reads++;
    } else {
      second.writes++;
      this.#totals.writes++;
    }
    if (this.#limit === null) return null;
    if (second.at !== this.#windowStart) {
      this.#windowStart = second.at;
      this.#windowCount = 0;
    }
    if (this.#windowCount >= this.#limit) {
      second.limited++;
      this.#totals.limited++;
      return this.#retryAfterSeconds;
    }
    this.#windowCount++;
    return null;
  }

  report(since = 0): TrafficReport {
    return {
      limit: { requestsPerSecond: this.#limit, retryAfterSeconds: this.#retryAfterSeconds },
      totals: { ...this.#totals },
      seconds: [...this.#seconds.values()]
        .filter((s) => s.at >= since)
        .map((s) => ({ ...s, readsByPath: { ...s.readsByPath } })),
    };
  }

  clear(): void {
    this.#limit = null;
    this.#retryAfterSeconds = 1;
    this.#seconds.clear();
    this.#totals.reads = 0;
    this.#totals.writes = 0;
    this.#totals.limited = 0;
  }

  #second(now: number): TrafficSecond {
    const at = now - (now % 1000);
    let second = this.#seconds.get(at);
    if (!second) {
      second = { at, reads: 0, writes: 0, limited: 0, readsByPath: {} };
      this.#seconds.set(at, second);
      // Oldest first (insertion order): drop what is past the window kept.
      for (const old of this.#seconds.keys()) {
        if (this.#seconds.size <= KEPT_SECONDS) break;
        this.#seconds.delete(old);
      }
    }
    return second;
  }
}
