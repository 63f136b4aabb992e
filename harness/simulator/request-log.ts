// The provider's own record of every request it received (the control API's view): when it arrived,
// what it carried, which fault it met and what it answered. Tests judge provider-side outcomes from
// this log, not from our ledger: when the two disagree, the provider's view is the one that matters.
import type { FaultKind } from './faults.js';

export type RequestFate =
  /** Still being handled (a fault delay, or a body not yet read). */
  | 'pending'
  /** A response was written. */
  | 'answered'
  /** The simulator cut the connection without a response (an injected fault). */
  | 'dropped'
  /** The simulator had an answer, but the client had already gone (it gave up waiting). */
  | 'client_gone'
  /** A reset or shutdown cancelled the request while it was held. */
  | 'cancelled';

export interface LoggedRequest {
  /** Arrival order, from 1; never reused, even across resets. */
  seq: number;
  /** Arrival time (ISO 8601, milliseconds). */
  at: string;
  method: string;
  path: string;
  /** The raw query string without "?" ('' when none). */
  query: string;
  /** The Idempotency-Key header as received; null when absent. */
  idempotencyKey: string | null;
  /** SHA-256 of the canonical JSON body (as the store hashes it); null when there is no JSON object body. */
  bodySha256: string | null;
  /** `metadata.effect_id` of the body, when it carries one (how a request is tied to an effect). */
  effectId: string | null;
  /** The injected fault this request consumed, if any. */
  fault: FaultKind | null;
  fate: RequestFate;
  /** HTTP status written (or that would have been written when the client was gone); null if none. */
  status: number | null;
  /** When the simulator answered, cut or gave up on the request. */
  settledAt: string | null;
  /** The object or post the answer names, when it names one. */
  objectId: string | null;
  /** True when a keyed request got the stored response of an earlier request with its key. */
  replayed: boolean;
  /** The error type of an error answer (`idempotency_error`, `invalid_request_error`, …). */
  errorType: string | null;
  /** The error code, when the answer has one (`idempotency_key_in_use`, …). */
  errorCode: string | null;
}

export interface RequestFilter {
  method?: string | undefined;
  /** Exact path. */
  path?: string | undefined;
  /** Only requests with seq greater than this. */
  since?: number | undefined;
}

export class RequestLog {
  readonly #entries: LoggedRequest[] = [];
  #seq = 0;

  start(method: string, path: string, query: string, idempotencyKey: string | null): LoggedRequest {
    const entry: LoggedRequest = {
      seq: ++this.#seq,
      at: new Date().toISOString(),
      method,
      path,
      query,
      idempotencyKey,
      bodySha256: null,
      effectId: null,
      fault: null,
      fate: 'pending',
      status: null,
      settledAt: null,
      objectId: null,
      replayed: false,
      errorType: null,
      errorCode: null,
    };
    this.#entries.push(entry);
    return entry;
  }

  list(filter: RequestFilter = {}): LoggedRequest[] {
    return this.#entries
      .filter(
        (e) =>
          (filter.method === undefined || e.method === filter.method) &&
          (filter.path === undefined || e.path === filter.path) &&
          (filter.since === undefined || e.seq > filter.since),
      )
      .map((e) => ({ ...e }));
  }

  clear(): number {
    return this.#entries.splice(0).length;
  }
}

/** Marks how a request ended, once: the first settlement wins. */
export function settle(entry: LoggedRequest, fate: Exclude<RequestFate, 'pending'>, status: number | null = null) {
  if (entry.fate !== 'pending') return;
  entry.fate = fate;
  entry.status = status;
  entry.settledAt = new Date().toISOString();
}
