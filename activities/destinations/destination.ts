// What every destination adapter declares and does. An adapter carries its destination's contract:
// how it dedupes, how long it remembers a key, how it sends, how it reads back, how it classifies.
import type { z } from 'zod';

export type DedupeMechanism = 'idempotency_key' | 'transactional' | 'natural_key' | 'none';

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
}

/** DESIGN.md's classification of what a provider call returned. */
export type SendOutcome =
  | { class: 'confirmed'; httpStatus: number; externalId: string; externalUrl?: string; occurredAt: string; detail: ResponseDetail }
  | { class: 'rejected'; httpStatus: number; detail: ResponseDetail }
  | { class: 'not_sent'; httpStatus?: number; retryAfterMs?: number; detail: ResponseDetail }
  | { class: 'unknown'; httpStatus?: number; detail: ResponseDetail };

export interface ResponseDetail {
  /** Why the adapter chose this class, in words. */
  reason: string;
  body?: unknown;
  replayed?: boolean;
  errorCode?: string;
}

/** The static half of an adapter: what the approving side needs to validate a request. */
export interface DestinationContract {
  name: string;
  mechanism: DedupeMechanism;
  /** How long the destination remembers a key; null when it honours none. */
  keyRetentionSeconds: number | null;
  /** Payload schema per operation; unknown operations are refused at approval. */
  operations: Record<string, z.ZodType<Record<string, unknown>>>;
  /** The destination call's timeout; after it, the outcome is unknown. */
  callTimeoutMs: number;
  /** Builds the exact package that will leave, stamping the effect ID where the API allows it. */
  buildPackage(effectId: string, operation: string, payload: Record<string, unknown>): ReleasedPackage;
  /** A few words on the target for the effect's summary, e.g. "refund 4000 EUR on ch_1". */
  describe(operation: string, payload: Record<string, unknown>): string;
}

export interface DestinationAdapter extends DestinationContract {
  send(request: SendRequest): Promise<SendOutcome>;
}
