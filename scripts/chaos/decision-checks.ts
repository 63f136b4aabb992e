// The decision invariants, from the ledger and the histories: a decision is applied to the step, the UNKNOWN
// episode and the revision it arrived in, or not at all; a decision re-sent with the same decision ID is one
// decision, whatever run it reaches. Plus what the table counts from the histories: effects whose activities
// ran on the worker with the skewed clock.
//
// A decision's arrival is read from the ledger as it stood when the operator sent it (its tag names its rows):
// the revision then, the first step of that revision without a fact, that step's latest attempt. Applied means
// accepted in the ledger (`decisions.decided_at`). Between arrival and application the effect must not have
// been revised, the step must not have got its fact (but from this very confirmation), and no further attempt of
// the step may have started: otherwise the decision answered something the effect had already left behind.
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { MAIN_STEP } from '../../domain/idempotency-key.js';
import type { Violation } from './commands.js';
import type { SentDecision } from './operator.js';
import type { ChaosStack } from './stack.js';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

export interface RunHistory {
  runId: string;
  startedAt: Date;
  events: HistoryEvent[];
}

/** Every run of an effect's workflow (continued as new, reset, resumed), oldest first. */
export async function readHistories(client: Client, effectId: string): Promise<RunHistory[]> {
  const runs: Array<{ runId: string; start: number }> = [];
  for await (const execution of client.workflow.list({ query: `WorkflowId = '${effectId.replace(/'/g, "\\'")}'` }))
    runs.push({ runId: execution.runId, start: execution.startTime.getTime() });
  runs.sort((a, b) => a.start - b.start);
  const histories: RunHistory[] = [];
  for (const { runId, start } of runs) {
    const history = await client.workflow
      .getHandle(effectId, runId)
      .fetchHistory()
      .catch(() => null);
    if (history) histories.push({ runId, startedAt: new Date(start), events: history.events ?? [] });
  }
  return histories;
}

/** The release revision a run was started to send (its input's `releaseRevision`; absent: 1). */
export function revisionOfRun(run: RunHistory): number | null {
  const payload = run.events[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
  if (!payload) return null;
  const input = defaultPayloadConverter.fromPayload<{ releaseRevision?: number }>(payload);
  return input?.releaseRevision ?? 1;
}

/** The run a reset replaced (`temporal workflow reset`): its reset run's failed workflow task names it. */
function resetFrom(run: RunHistory): string | undefined {
  for (const event of run.events) {
    const base = event.workflowTaskFailedEventAttributes?.baseRunId;
    if (base && base !== run.runId) return base;
  }
  return undefined;
}

/** Where a reset run's copy of the replaced run's events ends (its reset's failed workflow task); -1: not a reset run. */
function resetPoint(events: HistoryEvent[]): number {
  return events.findIndex((e) => e.workflowTaskFailedEventAttributes?.baseRunId);
}

/**
 * Whether the run was open at the answer: started by then, or made by a reset of a run that was (the reset run
 * takes the replaced run's place and its signals, the revision's among them).
 */
function openAtAnswer(runId: string, answeredAt: Date, histories: RunHistory[], depth = 0): boolean {
  const run = histories.find((h) => h.runId === runId);
  if (!run) return false;
  if (run.startedAt.getTime() <= answeredAt.getTime()) return true;
  const base = depth < 10 ? resetFrom(run) : undefined;
  return base !== undefined && openAtAnswer(base, answeredAt, histories, depth + 1);
}

/**
 * A revision the operator was told "created" had a run carrying it by then: revise() started it (or joined
 * one that carries it), or the run open at the answer, signalled by revise(), handed over to it (v5: it
 * continues as new carrying the revision — later than the answer when no worker was polling; a reset of that run
 * takes its place). A revision
 * whose first run started after the answer and fresh (not continued from another) waited for someone else
 * (the ledger reconciler) — revise() joined a run that was closing with the refused revision.
 */
export function revisionRunChecks(
  revisedAt: Record<number, Date> | undefined,
  effectId: string,
  histories: RunHistory[],
): Violation[] {
  const found: Violation[] = [];
  for (const [n, answeredAt] of Object.entries(revisedAt ?? {})) {
    const revision = Number(n);
    const carrying = histories.filter((h) => revisionOfRun(h) === revision);
    const first = carrying.sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime())[0];
    if (first && first.startedAt.getTime() <= answeredAt.getTime()) continue;
    const from = first?.events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
    if (from && openAtAnswer(from, answeredAt, histories)) continue;
    found.push({
      kind: 'revision_without_run',
      effectId,
      detail: `revision ${revision} was answered "created" at ${answeredAt.toISOString()} with no run carrying it; ${first ? `its first run started ${((first.startedAt.getTime() - answeredAt.getTime()) / 1000).toFixed(1)} s later` : 'no run ever carried it'}`,
    });
  }
  return found;
}

/**
 * Update IDs each run completed with `accepted: true` and acted on: an answer marked `repeated` (v5: the
 * ledger held the decision ID from an earlier run; what was decided then, nothing done again) does not count.
 */
export function acceptedUpdates(histories: RunHistory[]): Map<string, string[]> {
  const accepted = new Map<string, string[]>();
  // A reset run's history opens with a copy of the replaced run's events up to the reset point (its failed
  // workflow task): what it accepted there is the replaced run's acceptance, already counted (seed 1212000007).
  for (const { runId, events } of histories)
    for (const event of events.slice(resetPoint(events) + 1)) {
      const done = event.workflowExecutionUpdateCompletedEventAttributes;
      const id = done?.meta?.updateId;
      const payload = done?.outcome?.success?.payloads?.[0];
      if (!id || !payload) continue;
      const answer = defaultPayloadConverter.fromPayload<{ accepted?: boolean; repeated?: boolean }>(payload);
      if (answer?.accepted && !answer.repeated) accepted.set(id, [...(accepted.get(id) ?? []), runId]);
    }
  return accepted;
}

/** Whether any activity of these runs was taken up by one of the skewed worker's processes. */
export function ranOnSkewedWorker(histories: RunHistory[], pids: Set<number>): boolean {
  if (!pids.size) return false;
  return histories.some(({ events }) =>
    events.some((e) => {
      const identity = e.activityTaskStartedEventAttributes?.identity;
      const pid = identity ? Number(identity.split('@')[0]) : Number.NaN;
      return pids.has(pid);
    }),
  );
}

interface LedgerDecision {
  effectId: string;
  kind: string;
  accepted: boolean;
  decidedAt: Date;
  reason: string;
}

export interface DecisionCounts {
  /** Decisions the ledger holds for the run's effects, by kind and answer ("approve-retry accepted": 3). */
  byKind: Record<string, number>;
  sent: number;
}

export async function decisionChecks(
  stack: ChaosStack,
  prefix: string,
  sent: SentDecision[],
  histories: Map<string, RunHistory[]>,
): Promise<{ violations: Violation[]; counts: DecisionCounts }> {
  const { sql } = stack.ledger;
  const like = `${prefix}-%`;
  const [decisions, attempts, facts, evidence, revisions, releases] = await Promise.all([
    sql<LedgerDecision[]>`SELECT effect_id AS "effectId", kind, accepted, decided_at AS "decidedAt",
      coalesce(nullif(reason, ''), payload->'value'->>'reason', payload->>'reason', '') AS reason
      FROM decisions WHERE effect_id LIKE ${like}`,
    sql<{ effectId: string; step: string; attemptNumber: number; revision: number; startedAt: Date }[]>`
      SELECT effect_id AS "effectId", step, attempt_number AS "attemptNumber", release_revision AS revision,
             started_at AS "startedAt" FROM attempts WHERE effect_id LIKE ${like}`,
    sql<{ effectId: string; step: string; recordedAt: Date }[]>`
      SELECT effect_id AS "effectId", step, recorded_at AS "recordedAt" FROM facts WHERE effect_id LIKE ${like}`,
    sql<{ effectId: string; step: string; recordedAt: Date; externalId: string | null }[]>`
      SELECT effect_id AS "effectId", step, recorded_at AS "recordedAt", external_id AS "externalId"
        FROM provider_evidence WHERE effect_id LIKE ${like} AND kind = 'human'`,
    sql<{ effectId: string; revision: number; approvedAt: Date }[]>`
      SELECT effect_id AS "effectId", revision, approved_at AS "approvedAt" FROM revisions WHERE effect_id LIKE ${like}`,
    sql<{ effectId: string; revision: number; step: string; position: number }[]>`
      SELECT effect_id AS "effectId", revision, step, position FROM releases WHERE effect_id LIKE ${like}`,
  ]);
  const t = (d: Date | string) => new Date(d).getTime();
  const byKind: Record<string, number> = {};
  for (const d of decisions) {
    const key = `${d.kind} ${d.accepted ? 'accepted' : 'refused'}`;
    byKind[key] = (byKind[key] ?? 0) + 1;
  }
  const violations: Violation[] = [];
  const seenTags = new Set<string>();
  for (const s of sent) {
    if (s.resent || seenTags.has(s.tag)) continue;
    seenTags.add(s.tag);
    const at = s.at.getTime();
    const revisionAt = Math.max(
      1,
      ...revisions.filter((r) => r.effectId === s.effectId && t(r.approvedAt) <= at).map((r) => r.revision),
    );
    const steps = releases
      .filter((r) => r.effectId === s.effectId && r.revision === revisionAt)
      .sort((a, b) => a.position - b.position)
      .map((r) => r.step);
    const factAt = (step: string) => facts.find((f) => f.effectId === s.effectId && f.step === step);
    const step =
      steps.find((x) => !(factAt(x) && t((factAt(x) as { recordedAt: Date }).recordedAt) <= at)) ?? MAIN_STEP;
    const stepAttempts = attempts.filter(
      (a) => a.effectId === s.effectId && a.step === step && a.revision === revisionAt,
    );
    const attemptAt = Math.max(0, ...stepAttempts.filter((a) => t(a.startedAt) <= at).map((a) => a.attemptNumber));
    const applied = decisions.filter((d) => d.accepted && d.effectId === s.effectId && d.reason.includes(s.tag));
    const answered = `${s.kind} sent by ${s.operator} ${s.via === 'update' ? `(update ${s.decisionId?.slice(0, 8)})` : '(signal)'} at ${s.at.toISOString()}, when the effect was on revision ${revisionAt}, step ${step}, attempt ${attemptAt}`;
    if (applied.length > 1)
      violations.push({
        kind: 'decision_applied_twice',
        effectId: s.effectId,
        detail: `${answered}: accepted ${applied.length} times (${applied.map((d) => new Date(d.decidedAt).toISOString()).join(', ')})`,
      });
    for (const d of applied) {
      const when = t(d.decidedAt);
      const between = (x: Date) => t(x) > at && t(x) < when;
      const revised = revisions.find(
        (r) => r.effectId === s.effectId && r.revision > revisionAt && between(r.approvedAt),
      );
      if (revised) {
        violations.push({
          kind: 'decision_other_revision',
          effectId: s.effectId,
          detail: `${answered}: applied at ${new Date(d.decidedAt).toISOString()}, after revision ${revised.revision} (${new Date(revised.approvedAt).toISOString()})`,
        });
        continue;
      }
      // A confirmation's own fact is recorded just before its decision row: its evidence names the step it went to.
      const confirmedOn =
        s.kind === 'confirm-delivery'
          ? evidence
              .filter((e) => e.effectId === s.effectId && t(e.recordedAt) <= when && t(e.recordedAt) >= at)
              .sort((a, b) => t(b.recordedAt) - t(a.recordedAt))[0]?.step
          : undefined;
      const settled = factAt(step);
      if (confirmedOn !== undefined ? confirmedOn !== step : settled && between(settled.recordedAt)) {
        violations.push({
          kind: 'decision_other_step',
          effectId: s.effectId,
          detail: `${answered}: applied at ${new Date(d.decidedAt).toISOString()}, ${confirmedOn !== undefined ? `to step ${confirmedOn}` : `after step ${step} had its fact (${settled ? new Date(settled.recordedAt).toISOString() : '?'})`}`,
        });
        continue;
      }
      const later = stepAttempts.find((a) => a.attemptNumber > attemptAt && between(a.startedAt));
      if (later)
        violations.push({
          kind: 'decision_other_episode',
          effectId: s.effectId,
          detail: `${answered}: applied at ${new Date(d.decidedAt).toISOString()}, after attempt ${later.attemptNumber} of step ${step} had started (${new Date(later.startedAt).toISOString()})`,
        });
    }
  }
  // The same decision ID accepted by more than one run: re-sent across a continue-as-new, counted twice.
  const ids = new Map(sent.filter((s) => s.decisionId).map((s) => [s.decisionId as string, s]));
  for (const [effectId, runs] of histories)
    for (const [id, inRuns] of acceptedUpdates(runs)) {
      const s = ids.get(id);
      if (!s || inRuns.length < 2) continue;
      violations.push({
        kind: 'decision_applied_twice',
        effectId,
        detail: `${s.kind} update ${id.slice(0, 8)} (sent ${sent.filter((x) => x.decisionId === id).length}×, the same decision ID) was accepted by ${inRuns.length} runs: ${inRuns.map((r) => r.slice(0, 8)).join(', ')}`,
      });
    }
  return { violations, counts: { byKind, sent: sent.length } };
}
