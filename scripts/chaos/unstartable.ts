// Whether an effect that has no running workflow shows why, where an operator looks: its ledger row (a column
// the reconciler fills when a start fails: its name says so, start/resume failure, unstartable). Issue 19:
// "every unfinished effect has a running workflow within a bounded time, or shows why not, in its stage and
// reason". Today's ledger has no such column: a poison effect sits in `released`, looking like one starting.
import type { ChaosStack } from './stack.js';

const WHY_COLUMN = /unstart|start_(fail|error)|resume_(fail|error)|not_started|start_refus/i;

export async function unstartable(
  stack: ChaosStack,
  effectId: string,
): Promise<{ effectId: string; shown: boolean; why: string } | null> {
  const [row] = await stack.ledger.sql<{ effect: Record<string, unknown> }[]>`
    SELECT row_to_json(e) AS effect FROM effects e WHERE effect_id = ${effectId}`;
  if (!row) return null;
  const stage = String(row.effect.stage);
  if (['recorded', 'rejected', 'abandoned'].includes(stage)) return null;
  const shown = Object.entries(row.effect).find(([column, value]) => WHY_COLUMN.test(column) && value !== null);
  return {
    effectId,
    shown: !!shown,
    why: shown
      ? `${shown[0]}: ${String(typeof shown[1] === 'object' ? JSON.stringify(shown[1]) : shown[1]).slice(0, 200)}`
      : `stage ${stage}; nothing in its ledger row says that no start can succeed`,
  };
}
