// The only way an idempotency key is made. It depends on the effect ID and the step name, never on a
// run ID, activity ID or attempt number: a new key on retry would silently disable the provider's dedupe.
// The ledger's `key_is_effect_scoped` CHECK enforces the same rule on every attempt row.

export const MAIN_STEP = 'main';

/** Step names: short, lower-case; the ledger's `step_format` CHECK is built from this source. */
export const STEP_SOURCE = '^[a-z][a-z0-9_-]{0,31}$';

export function idempotencyKeyFor(effectId: string, step: string = MAIN_STEP): string {
  return step === MAIN_STEP ? effectId : `${effectId}:${step}`;
}
