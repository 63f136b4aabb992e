// Whether an effect that has no running workflow shows why, where an operator looks. Issue 19: "every
// unfinished effect has a running workflow within a bounded time, or shows why not, in its stage and reason".
// The ledger reconciler records each effect it could not start, and why, in `start_failures` (migration 0008,
// which `effect list` shows); a ledger without that table has nowhere to say it: a poison effect sits in
// `released`, looking like one about to start.
import type { ChaosStack } from './stack.js';

export async function unstartable(
  stack: ChaosStack,
  effectId: string,
): Promise<{ effectId: string; shown: boolean; why: string } | null> {
  const { sql } = stack.ledger;
  const [effect] = await sql<{ stage: string }[]>`SELECT stage FROM effects WHERE effect_id = ${effectId}`;
  if (!effect || ['recorded', 'rejected', 'abandoned'].includes(effect.stage)) return null;
  const [table] = await sql<{ present: boolean }[]>`SELECT to_regclass('start_failures') IS NOT NULL AS present`;
  if (!table?.present)
    return { effectId, shown: false, why: `stage ${effect.stage}; this ledger has no record of failed starts` };
  const [failure] = await sql<{ reason: string; failures: number }[]>`
    SELECT reason, failures FROM start_failures WHERE effect_id = ${effectId}`;
  return failure
    ? { effectId, shown: true, why: `start failed ${failure.failures}×: ${failure.reason.slice(0, 200)}` }
    : { effectId, shown: false, why: `stage ${effect.stage}; no start failure recorded for it` };
}
