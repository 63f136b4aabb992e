// What an operator's dashboard reads from the ledger on every scrape: how many effects stand in each
// stage, how long the oldest frozen one has waited, and how long the oldest one that should be moving on
// its own has not moved, counting an effect the ledger reconciler cannot start as unsettled whatever its
// stage (it has no workflow to move it). Indexed aggregate queries (effects_stage_idx; start_failures is small).
import { asc, count, eq, inArray, min } from 'drizzle-orm';
import { EFFECT_STAGES, type EffectStage, isTerminal } from '../domain/stages.js';
import type { LedgerDb } from './db.js';
import { effects, startFailures } from './schema.js';

export interface StageCensus {
  byStage: Partial<Record<EffectStage, number>>;
  /** When the longest-waiting effect in UNKNOWN got there (nothing is sent until evidence or a person settles it). */
  oldestUnknownSince: Date | null;
  /**
   * When the longest-unmoved effect that is neither terminal nor in UNKNOWN entered its stage, or, earlier,
   * when the ledger reconciler first failed to start an effect it still cannot start.
   */
  oldestUnsettledSince: Date | null;
  /** Effects the ledger reconciler's latest passes could not start (start_failures). */
  unstartable: number;
}

/** Stages an effect passes through on its own, within a call timeout or a retry delay. */
const UNSETTLED_STAGES = EFFECT_STAGES.filter((stage) => !isTerminal(stage) && stage !== 'unknown');

export async function stageCensus(db: LedgerDb): Promise<StageCensus> {
  const [rows, [oldest], [unsettled], [failing]] = await Promise.all([
    db.select({ stage: effects.stage, n: count() }).from(effects).groupBy(effects.stage).orderBy(asc(effects.stage)),
    db
      .select({ since: min(effects.stageChangedAt) })
      .from(effects)
      .where(eq(effects.stage, 'unknown')),
    db
      .select({ since: min(effects.stageChangedAt) })
      .from(effects)
      .where(inArray(effects.stage, UNSETTLED_STAGES)),
    db.select({ n: count(), since: min(startFailures.firstFailedAt) }).from(startFailures),
  ]);
  const since = [unsettled?.since, failing?.since].filter((d): d is Date => d instanceof Date);
  return {
    byStage: Object.fromEntries(rows.map((r) => [r.stage, r.n])),
    oldestUnknownSince: oldest?.since ?? null,
    oldestUnsettledSince: since.length ? new Date(Math.min(...since.map((d) => d.getTime()))) : null,
    unstartable: failing?.n ?? 0,
  };
}
