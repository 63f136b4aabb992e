// The only way an idempotency key is made. It depends on the effect ID and the step name, never on a
// run ID, activity ID or attempt number: a new key on retry would silently disable the provider's dedupe.
// The ledger's `key_is_effect_scoped` CHECK enforces the same rule on every attempt row.
import { EFFECT_ID_PATTERN } from './effect-id.js';

export const MAIN_STEP = 'main';

/** Step names: short, lower-case; the ledger's `step_format` CHECK is built from this source. */
export const STEP_SOURCE = '^[a-z][a-z0-9_-]{0,31}$';
const STEP_PATTERN = new RegExp(STEP_SOURCE);

/**
 * Between the effect ID and a step name. Effect IDs may contain `:` (`refund:A-1`), so `:` would let
 * effect `A` step `x` and effect `A:x` share the key `A:x`; `~` is outside the effect ID's character
 * set (domain/effect-id.ts) and the step's, so every key names exactly one (effect, step).
 */
export const STEP_SEPARATOR = '~';

export function idempotencyKeyFor(effectId: string, step: string = MAIN_STEP): string {
  // The main step's key is the effect ID itself (recorded histories and providers' stored keys rely on it).
  return step === MAIN_STEP ? effectId : `${effectId}${STEP_SEPARATOR}${step}`;
}

/** What a key (or the reference stamped in an object) names. */
export interface KeyReference {
  effectId: string;
  step: string;
}

/**
 * The (effect, step) a key or stamped reference names, or null when it is not one we make. The audit
 * pairs objects with steps by it: `A` is effect A's main step, `A~x` its step x.
 */
export function parseKey(key: string): KeyReference | null {
  const cut = key.indexOf(STEP_SEPARATOR);
  const effectId = cut < 0 ? key : key.slice(0, cut);
  const step = cut < 0 ? MAIN_STEP : key.slice(cut + 1);
  if (!EFFECT_ID_PATTERN.test(effectId) || !STEP_PATTERN.test(step) || (cut >= 0 && step === MAIN_STEP)) return null;
  return { effectId, step };
}
