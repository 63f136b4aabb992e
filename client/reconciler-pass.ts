// One pass of the ledger reconciler (docs/reconciler.md): every effect the ledger shows as unfinished gets a
// running workflow again. It pages through the unfinished effects by effect ID (keyset), asks Temporal's
// visibility in bulk which of each page run, describes only those it shows as not running, and starts the
// ones a describe confirms. Each effect stands alone: a start that fails is recorded for that effect, with
// why (start_failures), and the pass goes on, so no effect can blind the reconciler to those behind it.
import { type Client, WorkflowNotFoundError } from '@temporalio/client';
import { EFFECT_ID_PATTERN } from '../domain/effect-id.js';
import { type EffectStage, isTerminal } from '../domain/stages.js';
import { cutText, storableText } from '../domain/storable.js';
import type { LedgerDb } from '../ledger/db.js';
import type { EffectRow } from '../ledger/registration.js';
import {
  clearStartFailure,
  clearStartFailuresBefore,
  ledgerNow,
  MAX_START_FAILURE_REASON,
  recordStartFailure,
} from '../ledger/start-failures.js';
import { listUnfinishedEffects, readEffect } from '../ledger/trail.js';
import { EFFECT_WORKFLOW_TYPE } from '../workflows/contract.js';
import type { ReconcilerPassReport } from '../workflows/ledger-reconciler.js';
import { CONNECTION_CLOSED } from './connection-close.js';

export type { ReconcilerPassReport } from '../workflows/ledger-reconciler.js';

export const DEFAULT_RECONCILER_PAGE_SIZE = 500;
/** How many candidates are described and started at once. */
const DEFAULT_CONCURRENCY = 8;
/** Effects named in a report's lists (the counts are always whole). */
export const REPORTED_EFFECTS = 50;

/** Where an interrupted pass picks up (an activity's retry reads it from its last heartbeat). */
export interface ReconcilerPassCursor {
  /** The last effect ID of the last page done. */
  after: string;
  /** When the pass began, by the ledger's clock (ISO). */
  began: string;
}

export interface ReconcilerPassOptions {
  /** Effects whose stage moved more recently than this are left alone: their approver may still be starting them. */
  olderThanMs?: number;
  /** Unfinished effects read per ledger page; also the IDs in one visibility query (default 500). */
  pageSize?: number;
  /** Continue an interrupted pass from its cursor. */
  resume?: ReconcilerPassCursor;
  /** Called after every page, with the cursor to resume from (an activity heartbeats it). */
  onPage?: (cursor: ReconcilerPassCursor) => void;
  /** Called after every candidate examined (an activity heartbeats, so a long page does not look dead). */
  onEffect?: () => void;
}

export interface ReconcilerPassDeps {
  client: Client;
  db: LedgerDb;
  /** Starts (or joins) the effect's workflow: the client's own start, with its checks. */
  start(effect: EffectRow): Promise<void>;
}

export async function runReconcilerPass(
  deps: ReconcilerPassDeps,
  options: ReconcilerPassOptions = {},
): Promise<ReconcilerPassReport> {
  const t0 = performance.now();
  const olderThanMs = options.olderThanMs ?? 30_000;
  const pageSize = options.pageSize ?? DEFAULT_RECONCILER_PAGE_SIZE;
  if (!Number.isSafeInteger(pageSize) || pageSize < 1)
    throw new RangeError(`pageSize must be 1, 2, …, not ${pageSize}`);
  const began = options.resume ? new Date(options.resume.began) : await ledgerNow(deps.db);
  const report: ReconcilerPassReport = {
    checked: 0,
    running: 0,
    described: 0,
    resumed: 0,
    couldNotStart: 0,
    resumedEffects: [],
    failures: [],
    pages: 0,
    durationMs: 0,
    timings: { ledgerMs: 0, visibilityMs: 0, candidatesMs: 0 },
    ...(options.resume ? { resumedAfter: options.resume.after } : {}),
  };
  let after = options.resume?.after;
  const timed = async <T>(part: keyof ReconcilerPassReport['timings'], work: Promise<T>): Promise<T> => {
    const start = performance.now();
    try {
      return await work;
    } finally {
      report.timings[part] += performance.now() - start;
    }
  };
  for (;;) {
    const page = await timed(
      'ledgerMs',
      listUnfinishedEffects(deps.db, { olderThanMs, limit: pageSize, ...(after ? { after } : {}) }),
    );
    if (page.length === 0) break;
    report.pages += 1;
    report.checked += page.length;
    const running = await timed(
      'visibilityMs',
      runningAmong(
        deps.client,
        page.map((e) => e.effectId),
      ),
    );
    report.running += running.size;
    const candidates = page.filter((e) => !running.has(e.effectId));
    await timed(
      'candidatesMs',
      forEachAtOnce(candidates, DEFAULT_CONCURRENCY, async (effect) => {
        await examine(deps, effect.effectId, report);
        options.onEffect?.();
      }),
    );
    after = page[page.length - 1]?.effectId;
    if (after) options.onPage?.({ after, began: began.toISOString() });
    if (page.length < pageSize) break;
  }
  // Every page was read since `began`: a start failure no pass has refreshed since is not current.
  await clearStartFailuresBefore(deps.db, began);
  report.durationMs = Math.round(performance.now() - t0);
  for (const part of Object.keys(report.timings) as (keyof ReconcilerPassReport['timings'])[])
    report.timings[part] = Math.round(report.timings[part]);
  return report;
}

/** One candidate: running after all (visibility lags), finished meanwhile, started, or recorded as unstartable. */
async function examine(deps: ReconcilerPassDeps, effectId: string, report: ReconcilerPassReport): Promise<void> {
  try {
    report.described += 1;
    if (await isRunning(deps.client, effectId)) return;
    // Its last run may have finished it since the page was read: the ledger decides, read afresh.
    const effect = await readEffect(deps.db, effectId);
    if (!effect || isTerminal(effect.stage as EffectStage)) return;
    await deps.start(effect);
    report.resumed += 1;
    if (report.resumedEffects.length < REPORTED_EFFECTS) report.resumedEffects.push(effectId);
    await clearStartFailure(deps.db, effectId);
  } catch (error) {
    // Temporal itself unreachable, or our connection closing, is not this effect's fault: the pass stops and
    // fails as a whole.
    if (temporalUnreachable(error)) throw error;
    const reason = cutText(storableText(failureReason(error)), MAX_START_FAILURE_REASON);
    report.couldNotStart += 1;
    const stage = (await readEffect(deps.db, effectId).catch(() => null))?.stage ?? 'unknown';
    if (report.failures.length < REPORTED_EFFECTS) report.failures.push({ effectId, stage, reason });
    await recordStartFailure(deps.db, effectId, reason);
  }
}

/**
 * Which of these effects visibility shows with a running workflow: one count, and a listing only when the
 * count says some are not running. Visibility may lag a start by a moment; a describe settles each candidate.
 */
async function runningAmong(client: Client, effectIds: string[]): Promise<Set<string>> {
  // Effect IDs are quote-free by their pattern (the ledger's CHECK); anything else is a candidate.
  const quotable = effectIds.filter((id) => EFFECT_ID_PATTERN.test(id));
  if (quotable.length === 0) return new Set();
  const query = `WorkflowType = '${EFFECT_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running' AND WorkflowId IN (${quotable.map((id) => `'${id}'`).join(', ')})`;
  const { count } = await client.workflow.count(query);
  if (count >= quotable.length) return new Set(quotable);
  const running = new Set<string>();
  if (count === 0) return running;
  for await (const execution of client.workflow.list({ query, pageSize: quotable.length })) {
    running.add(execution.workflowId);
  }
  return running;
}

async function isRunning(client: Client, effectId: string): Promise<boolean> {
  try {
    return (await client.workflow.getHandle(effectId).describe()).status.name === 'RUNNING';
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return false;
    throw error;
  }
}

/** The error and its causes in one line: the server's own words are in the cause ("3 INVALID_ARGUMENT: …"). */
export function failureReason(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 5; depth++) {
    const message = current instanceof Error ? current.message : String(current);
    if (message && !parts.some((part) => part.includes(message))) parts.push(message);
    current = (current as { cause?: unknown }).cause;
  }
  return parts.join(': ') || 'the start failed without a message';
}

/**
 * gRPC UNAVAILABLE anywhere in the chain: the server could not be reached at all; or CANCELLED by our own
 * close (connection-close.ts), which leaves the pass nobody to report to.
 */
function temporalUnreachable(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; current && depth < 5; depth++) {
    const { code, details } = current as { code?: unknown; details?: unknown };
    if (code === 14 || (code === 1 && details === CONNECTION_CLOSED)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** fn over every item, at most `limit` at once; the first error stops the rest and is thrown. */
async function forEachAtOnce<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failed = false;
  const lane = async () => {
    while (next < items.length && !failed) {
      const item = items[next++] as T;
      await fn(item).catch((error: unknown) => {
        failed = true;
        throw error;
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}
