// The only way an idempotency key is made. It depends on the effect ID and the step name, never on a
// run ID, activity ID or attempt number: a new key on retry would silently disable the provider's dedupe.
// A revision of a refused effect (README, "Revisions") keeps that key where its destination allows a key to
// come back with other parameters, or takes the revision-scoped `key#r<n>` where it does not (the adapter's
// `keyScope`). The ledger's `key_is_effect_scoped` CHECKs enforce the same rule on every release and attempt row.
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

/**
 * Between a step's key and the revision it is scoped to: `refund:A-1#r2`, `task:T-1~announce#r3`. Like
 * `~`, `#` is outside the effect ID's and the step's characters, so `A#r2` can never be effect `A#r2`'s key
 * (`@`, inside the effect ID's characters, could: `A@r2` is a valid effect ID). Revision 1 has no suffix.
 */
export const REVISION_SEPARATOR = '#r';

/** How a destination scopes a key across revisions of one effect (its adapter declares it). */
export const KEY_SCOPES = [
  'effect', // the same key for every revision: the destination lets a key come back with other parameters
  'revision', // a key per revision: the destination refuses a key that returns with other parameters (400/409)
] as const;
export type KeyScope = (typeof KEY_SCOPES)[number];

export function idempotencyKeyFor(effectId: string, step: string = MAIN_STEP): string {
  // The main step's key is the effect ID itself (recorded histories and providers' stored keys rely on it).
  return step === MAIN_STEP ? effectId : `${effectId}${STEP_SEPARATOR}${step}`;
}

/** A step's key in a revision: the step's key, scoped to the revision where the destination needs that. */
export function revisionKeyFor(effectId: string, step: string, revision: number, scope: KeyScope): string {
  const key = idempotencyKeyFor(effectId, step);
  return scope === 'revision' && revision > 1 ? `${key}${REVISION_SEPARATOR}${revision}` : key;
}

/** What a key (or the reference stamped in an object) names. */
export interface KeyReference {
  effectId: string;
  step: string;
  /** The revision a revision-scoped key names; 1 for an unscoped key. */
  revision: number;
}

/**
 * The (effect, step, revision) a key or stamped reference names, or null when it is not one we make. The
 * audit pairs objects with steps by it: `A` is effect A's main step, `A~x` its step x, `A~x#r2` step x of
 * revision 2 (a revision-scoped key).
 */
export function parseKey(key: string): KeyReference | null {
  const scoped = /^(.*)#r([1-9][0-9]{0,8})$/.exec(key);
  const revision = scoped ? Number(scoped[2]) : 1;
  if (scoped && revision < 2) return null;
  const unscoped = scoped ? (scoped[1] as string) : key;
  const cut = unscoped.indexOf(STEP_SEPARATOR);
  const effectId = cut < 0 ? unscoped : unscoped.slice(0, cut);
  const step = cut < 0 ? MAIN_STEP : unscoped.slice(cut + 1);
  if (!EFFECT_ID_PATTERN.test(effectId) || !STEP_PATTERN.test(step) || (cut >= 0 && step === MAIN_STEP)) return null;
  return { effectId, step, revision };
}
