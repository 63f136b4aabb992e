// What an operator's dashboard reads from the ledger on every scrape: how many effects stand in each
// stage, and how long the oldest frozen one has waited. Two indexed aggregate queries (effects_stage_idx).
import { asc, count, eq, min } from 'drizzle-orm';
import type { EffectStage } from '../domain/stages.js';
import type { LedgerDb } from './db.js';
import { effects } from './schema.js';

export interface StageCensus {
  byStage: Partial<Record<EffectStage, number>>;
  /** When the longest-waiting effect in UNKNOWN got there (nothing is sent until evidence or a person settles it). */
  oldestUnknownSince: Date | null;
}

export async function stageCensus(db: LedgerDb): Promise<StageCensus> {
  const [rows, [oldest]] = await Promise.all([
    db.select({ stage: effects.stage, n: count() }).from(effects).groupBy(effects.stage).orderBy(asc(effects.stage)),
    db
      .select({ since: min(effects.stageChangedAt) })
      .from(effects)
      .where(eq(effects.stage, 'unknown')),
  ]);
  return {
    byStage: Object.fromEntries(rows.map((r) => [r.stage, r.n])),
    oldestUnknownSince: oldest?.since ?? null,
  };
}
