// The attributes effect-ledger's spans carry (docs/tracing.md): one name per fact, the same from the client, the
// workflow bundle and the activities, so a trace backend finds every span of an effect by `effect.id`.
export const TRACE_ATTRIBUTES = {
  effectId: 'effect.id',
  step: 'effect.step',
  revision: 'effect.revision',
  attempt: 'effect.attempt',
  idempotencyKey: 'effect.idempotency_key',
  destination: 'effect.destination',
  operation: 'effect.operation',
  /** What approve found: a new effect, or one approved before (absorbed). */
  created: 'effect.created',
  stage: 'effect.stage',
  /** A provider call's class: confirmed, rejected, unknown, not_sent. */
  outcome: 'effect.outcome',
  /** A readback's verdict: found, absent, inconclusive; and what it covered. */
  readbackVerdict: 'effect.readback.verdict',
  readbackCoverage: 'effect.readback.coverage',
  /** A person's decision: approve-retry, confirm-delivery, abandon. */
  decision: 'effect.decision',
  /** Whether the object a person named exists at the destination (confirm-delivery's lookup). */
  lookupExists: 'effect.lookup.exists',
} as const;

/** The tracer's name: what a backend shows as the spans' instrumentation scope. */
export const TRACER_NAME = 'effect-ledger';

/**
 * The header that carries, from the workflow to the retry's attempt activity, the person's decision the retry
 * follows (workers/workflow-tracing.ts): the activity's span is linked to it.
 */
export const DECISION_TRACE_HEADER = '_effect-ledger-decision';
