// A person settles thousands at once: `effect decide --where '<visibility query>' --look-now | --approve-retry |
// --abandon`. First a dry run: every running effect the query selects, what would be sent to it and why (or why
// not). Each decision is bound to what the dry run saw — the step, revision and attempt the effect was on — so an
// effect that moved on meanwhile refuses it as stale, and the answer is reported per effect. A plan can be saved
// and sent later (`--plan`), exactly as it was reviewed.
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { type Client, WorkflowUpdateFailedError } from '@temporalio/client';
import type { SingleBar } from 'cli-progress';
import { z } from 'zod';
import type { EffectLedgerClient } from '../client/effect-ledger-client.js';
import { EFFECT_WORKFLOW_TYPE, type EffectStatus, statusQuery } from '../workflows/contract.js';
import { effectAwaitingKey, effectStageKey } from '../workflows/search-attributes.js';

export const BULK_ACTIONS = ['look-now', 'approve-retry', 'abandon'] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];

/** One effect of a plan: what it was seen doing, what will be sent to it (bound to that), or why nothing. */
export interface PlannedDecision {
  effectId: string;
  stage: string;
  awaiting?: string;
  /** What the decision answers: sent with it, so the effect refuses it once it has moved past. */
  bind?: { step: string; revision: number; attempt: number };
  /** Why nothing is sent to this one. */
  skip?: string;
}

export interface BulkPlan {
  action: BulkAction;
  where: string;
  actor: string;
  reason: string;
  /** Names the batch: each decision's ID is `<batch>:<effect ID>`, so a plan sent twice decides once. */
  batch: string;
  effects: PlannedDecision[];
}

const planSchema = z.object({
  action: z.enum(BULK_ACTIONS),
  where: z.string(),
  actor: z.string().min(1),
  reason: z.string().min(1),
  batch: z.string().min(1),
  effects: z.array(
    z.object({
      effectId: z.string(),
      stage: z.string(),
      awaiting: z.string().optional(),
      bind: z.object({ step: z.string(), revision: z.number(), attempt: z.number() }).optional(),
      skip: z.string().optional(),
    }),
  ),
});

export function readPlan(path: string): BulkPlan {
  return planSchema.parse(JSON.parse(readFileSync(path, 'utf8')));
}

export function writePlan(path: string, plan: BulkPlan): void {
  writeFileSync(path, `${JSON.stringify(plan, null, 2)}\n`);
}

/** Why an effect in this state takes no such action, or undefined. */
function skipReason(action: BulkAction, status: EffectStatus): string | undefined {
  if (status.stage === 'unknown') {
    const last = status.readbacks.at(-1);
    if (action === 'abandon' && last && last.outcome !== 'absent' && last.outcome !== 'found')
      return `the last look could not tell (${last.outcome}): an abandon then needs a person's word that the object is not there — check the provider, then decide this one alone (decide … abandon --checked-absent)`;
    return undefined;
  }
  // An effect pausing with nothing in flight takes an abandon; one mid-attempt refuses it (the workflow decides).
  if (action === 'abandon' && status.stage === 'attempted') return undefined;
  return `not waiting for this: the effect is ${status.stage}${status.awaiting ? ` (${status.awaiting})` : ''}`;
}

/** The dry run: every running effect workflow the query selects, with what it would get. */
export async function planBulk(
  client: Client,
  request: Omit<BulkPlan, 'effects' | 'batch'>,
  onProgress?: (seen: number) => void,
  concurrency = 16,
): Promise<BulkPlan> {
  const query = `WorkflowType = '${EFFECT_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running' AND (${request.where})`;
  const ids: string[] = [];
  const listed = new Map<string, { stage?: string; awaiting?: string }>();
  for await (const execution of client.workflow.list({ query })) {
    ids.push(execution.workflowId);
    const attributes = execution.typedSearchAttributes;
    listed.set(execution.workflowId, {
      stage: attributes.get(effectStageKey),
      awaiting: attributes.get(effectAwaitingKey),
    });
  }
  // A look-now binds to nothing (a look is harmless whenever it comes): the list's search attributes are the plan,
  // with no query per effect — 300 queries took 34–42 s on a loaded dev server, longer than the drain they start.
  if (request.action === 'look-now') {
    const effects = ids.map((effectId): PlannedDecision => {
      const { stage = '?', awaiting } = listed.get(effectId) ?? {};
      return {
        effectId,
        stage,
        ...(awaiting ? { awaiting } : {}),
        ...(stage === 'unknown' ? {} : { skip: `not waiting for this: the effect is ${stage}` }),
      };
    });
    onProgress?.(ids.length);
    return { ...request, batch: randomUUID(), effects };
  }
  // Each live view is a query a worker answers: several at once, or planning 10,000 takes longer than the drain.
  let seen = 0;
  const planOne = async (effectId: string): Promise<PlannedDecision> => {
    try {
      const status = await client.workflow.getHandle(effectId).query(statusQuery);
      const skip = skipReason(request.action, status);
      return {
        effectId,
        stage: status.stage,
        ...(status.awaiting ? { awaiting: status.awaiting } : {}),
        ...(skip ? { skip } : status.decideOn ? { bind: status.decideOn } : {}),
      };
    } catch (error) {
      return { effectId, stage: '?', skip: `no live view: ${(error as Error).message}` };
    }
  };
  const effects = await inLanes(ids, concurrency, async (effectId) => {
    const planned = await planOne(effectId);
    onProgress?.(++seen);
    return planned;
  });
  return { ...request, batch: randomUUID(), effects };
}

export interface BulkOutcome {
  effectId: string;
  result: 'accepted' | 'refused' | 'asked' | 'skipped' | 'failed';
  detail: string;
}

/** Sends a plan, `concurrency` at a time; every effect gets a line, none is left out. */
export async function sendBulk(
  effects: EffectLedgerClient,
  plan: BulkPlan,
  {
    concurrency = 8,
    progress,
    lookNowBy,
  }: { concurrency?: number; progress?: SingleBar; lookNowBy?: 'reset-or-signal' | 'signal' } = {},
): Promise<BulkOutcome[]> {
  const one = async (item: PlannedDecision): Promise<BulkOutcome> => {
    if (item.skip) return { effectId: item.effectId, result: 'skipped', detail: item.skip };
    const { actor, reason } = plan;
    try {
      if (plan.action === 'look-now') {
        const how = await effects.lookNow(item.effectId, { actor, reason }, lookNowBy ? { by: lookNowBy } : {});
        return {
          effectId: item.effectId,
          result: 'asked',
          detail:
            how === 'reset'
              ? 'its waiting look was reset: taken now, no history written'
              : 'asked by the look-now signal (no look was waiting to be reset)',
        };
      }
      const answer = await effects.decide(
        item.effectId,
        plan.action,
        { actor, reason, ...(item.bind ?? {}) },
        `${plan.batch}:${item.effectId}`,
      );
      return {
        effectId: item.effectId,
        result: answer.accepted ? 'accepted' : 'refused',
        detail: answer.accepted ? `${answer.stage}${answer.reason ? `: ${answer.reason}` : ''}` : (answer.reason ?? ''),
      };
    } catch (error) {
      // The update's validator refused it (the effect no longer waits for it): a refusal, with why.
      if (error instanceof WorkflowUpdateFailedError)
        return { effectId: item.effectId, result: 'refused', detail: error.cause?.message ?? error.message };
      return { effectId: item.effectId, result: 'failed', detail: (error as Error).message };
    }
  };
  return inLanes(plan.effects, concurrency, async (item) => {
    const outcome = await one(item);
    progress?.increment();
    return outcome;
  });
}

/** `fn` over every item, `concurrency` at a time, the results in the items' order. */
async function inLanes<T, R>(items: readonly T[], concurrency: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < items.length; i = next++) results[i] = await fn(items[i] as T);
  };
  await Promise.all(Array.from({ length: Math.max(1, concurrency) }, lane));
  return results;
}

/** The dry run as a person reads it: one line per effect, then the counts. */
export function formatPlan(plan: BulkPlan): string {
  const to = plan.effects.filter((e) => !e.skip);
  const lines = [
    `${plan.action} for ${to.length} of ${plan.effects.length} effects selected by: ${plan.where}`,
    `  as ${plan.actor}: ${plan.reason}`,
    '',
    ...plan.effects.map((e) =>
      e.skip
        ? `  skip ${e.effectId}: ${e.skip}`
        : `  ${plan.action} ${e.effectId}${e.bind ? ` (bound to step ${e.bind.step}, revision ${e.bind.revision}, attempt ${e.bind.attempt})` : ''}: ${e.awaiting ?? e.stage}`,
    ),
  ];
  return lines.join('\n');
}

/** The summary at the end: counts by result, then the effects that did not take it, with why. */
export function formatOutcomes(outcomes: BulkOutcome[]): string {
  const counts = new Map<string, number>();
  for (const o of outcomes) counts.set(o.result, (counts.get(o.result) ?? 0) + 1);
  const table = ['| result | effects |', '|---|---|', ...[...counts].map(([result, n]) => `| ${result} | ${n} |`)];
  const notTaken = outcomes.filter((o) => o.result !== 'accepted' && o.result !== 'asked');
  return [
    ...table,
    ...(notTaken.length ? ['', ...notTaken.map((o) => `  ${o.result} ${o.effectId}: ${o.detail}`)] : []),
  ].join('\n');
}
