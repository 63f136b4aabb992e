// What every destination adapter declares and does. An adapter carries its destination's contract:
// how it dedupes, how long it remembers a key, how it sends, how it reads back, how it classifies.
// Types only (and the mechanism list): adapters implement them in activities/destinations/.
import type { KeyScope } from './idempotency-key.js';
import type { Coverage } from './outcomes.js';

/** How a destination dedupes; the ledger records it per effect (`mechanism_known` CHECK). */
export const DEDUPE_MECHANISMS = ['idempotency_key', 'transactional', 'natural_key', 'none'] as const;
export type DedupeMechanism = (typeof DEDUPE_MECHANISMS)[number];

/**
 * A payload validator, as the approval API needs it. A zod schema is one; declared structurally so
 * this layer stays free of dependencies.
 */
export interface PayloadSchema {
  safeParse(
    value: unknown,
  ):
    | { success: true; data: Record<string, unknown> }
    | { success: false; error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] } };
}

/** The exact package allowed to leave, as the release records it. */
export interface ReleasedPackage {
  /** Target identity, e.g. "POST /v1/objects customer=cus_1": what a readback must match. */
  target: string;
  body: Record<string, unknown>;
}

export interface SendRequest {
  effectId: string;
  idempotencyKey: string;
  operation: string;
  package: ReleasedPackage;
  timeoutMs: number;
  /**
   * Fires at the call's timeout (`timeoutMs`), or when the activity is cancelled: stop the request then. A send that
   * returns at its deadline but leaves its request running (an SDK's own retry) can land after the in-flight window,
   * be read back as absent and be sent again — pass this signal to whatever makes the request.
   */
  signal?: AbortSignal;
}

/** What a provider call returned, classified (README, "Stages": the classification table). */
export type SendOutcome =
  | {
      class: 'confirmed';
      httpStatus: number;
      externalId: string;
      externalUrl?: string;
      occurredAt: string;
      detail: ResponseDetail;
    }
  | { class: 'rejected'; httpStatus: number; detail: ResponseDetail }
  | { class: 'not_sent'; httpStatus?: number; retryAfterMs?: number; detail: ResponseDetail }
  | { class: 'unknown'; httpStatus?: number; detail: ResponseDetail };

export interface ResponseDetail {
  /** Why the adapter chose this class, in words. */
  reason: string;
  body?: unknown;
  replayed?: boolean;
  errorCode?: string;
  /** Set by the send activity: how long after asking for the attempt row the request began to leave (ms). */
  sendBeganAfterMs?: number;
  /** The field of an answer that could not be read as declared (`object.createdAt`): the answer is unknown. */
  unreadable?: string;
  /** Set by the send activity: how the request went — the declaration's mechanism, key header and scope then. */
  sentWith?: SentWith;
}

/** How a request went, as the hosting worker's declaration said then: what a later retry is compared with. */
export interface SentWith {
  mechanism: string;
  keyHeader: string | null;
  keyScope: string;
}

/**
 * One outbound step of a multi-step operation: where it goes, as which operation, with what payload.
 * The first step of a plan is always `main`, on the effect's own destination, as one of its plain
 * operations; the others may go anywhere (README, "Multi-step effects").
 */
export interface StepPlan {
  step: string;
  destination: string;
  operation: string;
  payload: Record<string, unknown>;
}

/** The static half of an adapter: what the approving side needs to validate a request. */
export interface DestinationContract {
  name: string;
  mechanism: DedupeMechanism;
  /**
   * How long the destination remembers a key, in seconds. null means no expiry to declare, and what that
   * means depends on `mechanism`: `transactional` — the key is stored with the effect and lives as long as
   * it (no expiry; every retry is deduped); `natural_key` and `none` — the destination honours no key at all,
   * so nothing dedupes a second send. Read null together with the mechanism, never alone.
   */
  keyRetentionSeconds: number | null;
  /**
   * A revision of a refused effect (README, "Revisions"): `effect` keeps the key (the destination lets a key
   * come back with other parameters, or honours none), `revision` takes `key#r<n>` (it answers 400/409 when
   * a key returns with other parameters, or would replay the refusal stored under it).
   */
  keyScope: KeyScope;
  /**
   * Optional: the header the key travels in, for a destination that takes it over HTTP (httpDestination sets it).
   * Recorded with each attempt's answer (`detail.sentWith`); a retry is not sent by a worker whose declaration
   * names another (the provider would not see the key it deduped by): the effect waits, visibly.
   */
  keyHeader?: string;
  /** Payload schema per operation; unknown operations are refused at approval. */
  operations: Readonly<Record<string, PayloadSchema>>;
  /** The destination call's timeout; after it, the outcome is unknown. */
  callTimeoutMs: number;
  /**
   * May a retry with the same key follow a readback that proved absence over complete coverage,
   * without a human? Only where a duplicate is impossible or the key still dedupes.
   */
  retryAfterProvenAbsence: boolean;
  /**
   * How long after our last request's call timeout the destination may still be processing it. Until
   * then, finding nothing is not absence: readback answers inconclusive, and no retry leaves.
   */
  absenceGraceMs: number;
  /**
   * While a person is awaited, readback repeats: first after the effect's readback interval, then twice as
   * long each time, up to this cap — a wait of weeks stays cheap for the provider and for the history.
   */
  readbackMaxIntervalMs: number;
  /**
   * Readback requests a second this destination takes, from all workers together (default
   * DEFAULT_READBACK_RATE_PER_SECOND): when a provider comes back from an outage, the readbacks of every effect
   * waiting on it queue behind this rate, so a recovering provider is not hammered. One readback makes one to a
   * few requests (a key lookup, then the object; a listing's pages): each takes its turn in the ledger
   * (readback_pace), so the provider never sees more than this in any second. The readbacks' own task queue is
   * rate-limited by the Temporal server at the same number, which keeps the turns' queue short.
   */
  readbackRatePerSecond?: number;
  /**
   * Operations made of several outbound steps: each splits the approved payload into its steps, in the
   * order they leave. Every step is validated against its own destination's operation at approval.
   */
  steps?: Readonly<Record<string, (payload: Record<string, unknown>) => StepPlan[]>>;
  /**
   * Builds the exact package that will leave, stamping the reference where the API allows it: the effect
   * ID for the main step, the step's key (`effectID~step`) for any other, so readback tells steps apart.
   */
  buildPackage(effectId: string, operation: string, payload: Record<string, unknown>): ReleasedPackage;
  /** A few words on the target for the effect's summary, e.g. "refund 4000 EUR on ch_1". */
  describe(operation: string, payload: Record<string, unknown>): string;
}

/**
 * How far a provider's clock may be off the ledger's, when a readback judges the provider's creation times against
 * the attempt's time (a listing's "reached back past the attempt", a mailbox's "still holds everything since"):
 * a minute, unless a declaration says otherwise (`clockToleranceMs`).
 */
export const DEFAULT_CLOCK_TOLERANCE_MS = 60_000;

/** Readbacks a second for a destination whose contract declares no rate of its own. */
export const DEFAULT_READBACK_RATE_PER_SECOND = 10;

/**
 * The slowest readback rate the pacing can serve: a readback's further request waits at most 10 s for its turn
 * (ledger/readback-pace.ts FURTHER_REQUEST_HORIZON_MS), and a turn is 1.05 intervals long, so below 1.05/10 a
 * request never gets one and the readback retries for good.
 */
export const MIN_READBACK_RATE_PER_SECOND = 0.105;
/** A turn's length in intervals of the declared rate (the pacing's margin). */
export const READBACK_TURN_FACTOR = 1.05;
/** How long one readback may run (the look activity's start-to-close): all its paced requests must fit. */
export const READBACK_RUN_MS = 120_000;

/** The task queue a destination's readbacks run on, beside the effects' own `taskQueue`. */
export function readbackTaskQueue(taskQueue: string, destination: string): string {
  return `${taskQueue}-readback-${destination}`;
}

export interface ReadbackRequest {
  effectId: string;
  idempotencyKey: string;
  package: ReleasedPackage;
  /** sha256 of the released body's canonical JSON: what the exact object must carry. */
  bodySha256: string;
  /** When the earliest attempt started: the object cannot be older. */
  since: string;
  /** Fires when the activity is cancelled or reaches its deadline: abort the reads then. */
  signal?: AbortSignal;
  /** Called after each page or lookup: the activity heartbeats (once it has run 3 s), so a hung read is noticed. */
  onPage?: () => void;
  /**
   * Awaited before each request a readback makes to the provider (a hand-written adapter calls it too): waits
   * for the request's turn under the destination's `readbackRatePerSecond`, shared by every worker. An adapter
   * that never calls it is paced one request per readback. It throws when the destination's turns are taken
   * for longer than a readback waits: let that through (the readback is retried later; it is never a verdict).
   */
  beforeRequest?: () => Promise<void>;
}

/**
 * What a readback showed. `absent` is only ever claimed over complete coverage; a partial read
 * ("not in the first 100 items") is `inconclusive`, never `absent`.
 */
export type ReadbackResult =
  | {
      outcome: 'found';
      coverage: Coverage;
      externalId: string;
      externalUrl?: string;
      occurredAt: string;
      detail: ReadbackDetail;
    }
  | { outcome: 'absent'; coverage: 'complete'; detail: ReadbackDetail }
  | { outcome: 'inconclusive'; coverage: 'partial'; detail: ReadbackDetail };

export interface ReadbackDetail {
  method: string;
  reason: string;
  scanned?: number;
  /** Other objects carrying this effect's reference: duplicates made before we existed, for a human. */
  duplicates?: string[];
  /** Set when nothing was found while our last request may still be processed, until then (ISO time). */
  inFlightUntil?: string;
  /** The destination itself reports a request with our key still being processed (no end it can name). */
  stillProcessing?: boolean;
  /** The field of an answer that could not be read as declared: inconclusive, a person decides. */
  unreadable?: string;
}

/** An object a human names as the result, as the destination shows it. */
export type LookupResult =
  | { exists: true; externalId: string; externalUrl?: string; occurredAt: string; matchesRelease: boolean }
  | { exists: false };

export interface DestinationAdapter extends DestinationContract {
  send(request: SendRequest): Promise<SendOutcome>;
  /**
   * Optional: why this worker cannot send a released package (its operation is gone from the declaration, its path
   * can no longer be filled from the released body), or undefined when it can. Asked before an attempt is made: an
   * effect it cannot send waits, visibly, for a worker that can, and no attempt is written meanwhile.
   */
  unsendable?(operation: string, pkg: ReleasedPackage): string | undefined;
  /** Looks for the exact object; never writes. Throws on transient errors (the activity retries). */
  readBack(request: ReadbackRequest): Promise<ReadbackResult>;
  /** Fetches one object by its ID, to check a human's evidence. */
  lookup(externalId: string, request: ReadbackRequest): Promise<LookupResult>;
  /**
   * The object ID a URL of this destination names (query and fragment ignored), or null when the URL
   * has none of the destination's object URL shapes: a human may confirm by URL alone.
   */
  resolveUrl(url: string): string | null;
  /** What the destination's object URLs look like, for a refusal's message, e.g. "https://…/v1/objects/<id>". */
  objectUrlShape: string;
  /**
   * Optional: ends what the connection keeps open (a client's socket, a pool), so the worker's process can exit.
   * The worker calls it once it has stopped, after its last activity; a call after it may connect anew.
   */
  close?(): Promise<void>;
}
