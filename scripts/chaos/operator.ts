// What the chaos run's operators see and send: an effect's live view (the step it waits on, that step's
// latest attempt, the revision), the object on the destination's dashboard, and a decision sent through a
// signal or the `decide` update. Every decision carries a tag in its reason, so the checker finds its ledger
// row, and is written down with what the effect showed when it left (scripts/chaos/decision-checks.ts).
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { MAIN_STEP } from '../../domain/idempotency-key.js';
import { readTrail } from '../../ledger/trail.js';
import {
  abandonSignal,
  approveRetrySignal,
  confirmDeliverySignal,
  type EffectStatus,
  statusQuery,
} from '../../workflows/contract.js';
import type { DestinationObject } from '../audit/destination-records.js';
import type { Real } from './commands.js';

export const OPERATOR = 'ops@example.com';
export type DecisionKindSent = 'approve-retry' | 'confirm-delivery' | 'abandon';
export type DecisionPayload = {
  actor: string;
  reason: string;
  externalId?: string;
  /** What it answers, copied from the status's `decideOn` by an operator who binds it. */
  step?: string;
  revision?: number;
  attempt?: number;
  checkedAbsent?: true;
};

/** One decision as it left an operator's hands. */
export interface SentDecision {
  /** The tag in its reason: `[chaos <prefix> d<n>]`. */
  tag: string;
  effectId: string;
  kind: DecisionKindSent;
  via: 'signal' | 'update';
  /** The update's ID (a decision re-sent with it is the same decision). */
  decisionId?: string;
  /** This send repeats an earlier one with the same decision ID (a client retrying after a timeout). */
  resent?: boolean;
  at: Date;
  /** Who sent it: two operators may decide on one effect at once. */
  operator: string;
  /** What the effect showed when it was sent: the step it waited on, that step's latest attempt, the revision. */
  step: string;
  attempt: number;
  revision: number;
  /** What came back: accepted, refused (with why), or not answered (a signal, a closed run). */
  answer?: 'accepted' | 'refused' | 'no answer';
}

/** What an operator sees of one effect: its live view and the latest release of the step it waits on. */
export interface OperatorView {
  live: EffectStatus | null;
  step: string;
  attempt: number;
  revision: number;
  release?: { destination: string; idempotencyKey: string; bodySha256: string };
}

/** The status query, bounded (no worker may be polling). */
export async function liveView(r: Real, effectId: string, ms = 5000): Promise<EffectStatus | null> {
  const query = r.stack.client.workflow.getHandle(effectId).query(statusQuery);
  query.catch(() => {});
  return Promise.race([query, new Promise<null>((resolve) => setTimeout(() => resolve(null), ms).unref())]).catch(
    () => null,
  );
}

export async function lookAt(r: Real, effectId: string): Promise<OperatorView> {
  const [live, trail] = await Promise.all([liveView(r, effectId), readTrail(r.stack.ledger.db, effectId)]);
  const step = live?.step ?? trail?.waitingOnStep ?? MAIN_STEP;
  const revision = live?.revision ?? trail?.effect.revision ?? 1;
  const attempts = (live?.attempts ?? []).filter((a) => (a.step ?? MAIN_STEP) === step);
  const attempt = Math.max(0, ...attempts.map((a) => a.attemptNumber));
  const release = trail?.releases
    .filter((x) => x.step === step)
    .sort((a, b) => b.revision - a.revision)
    .at(0);
  return {
    live,
    step,
    attempt,
    revision,
    ...(release
      ? {
          release: {
            destination: release.destination,
            idempotencyKey: release.idempotencyKey,
            bodySha256: release.bodySha256,
          },
        }
      : {}),
  };
}

/** The oldest object on the step's destination dashboard carrying its latest release's key and body. */
export async function onDashboard(r: Real, view: OperatorView): Promise<DestinationObject | undefined> {
  const release = view.release;
  if (!release) return undefined;
  const records = r.stack.recordsOf(release.destination);
  if (!records) return undefined;
  const objects = await records.objects().catch(() => [] as DestinationObject[]);
  return objects.filter((o) => o.effectId === release.idempotencyKey && o.bodySha256 === release.bodySha256).at(-1);
}

/** The effect waits in UNKNOWN for a person (its live view, bounded: no worker may be polling). */
export async function asksPerson(r: Real, effectId: string): Promise<boolean> {
  const live = await liveView(r, effectId, 1000);
  return live?.stage === 'unknown' && /person|human/.test(live.awaiting ?? '');
}

/**
 * An operator who finds the effect's object on the destination's dashboard confirms it, through the update. One who
 * does not, with `elseAbandon`, abandons it, saying they saw it is not there (what an abandon over a look that could
 * not tell needs); otherwise sends nothing.
 */
export async function confirmFromDashboard(
  r: Real,
  effectId: string,
  reason: string,
  { elseAbandon = false } = {},
): Promise<void> {
  const view = await lookAt(r, effectId);
  const object = await onDashboard(r, view);
  if (object)
    await sendDecision(
      r,
      effectId,
      'confirm-delivery',
      { actor: OPERATOR, reason, externalId: object.id },
      { via: 'update', seen: view },
    );
  else if (elseAbandon)
    await sendDecision(
      r,
      effectId,
      'abandon',
      { actor: OPERATOR, reason: 'not on the dashboard', checkedAbsent: true },
      { via: 'update', seen: view },
    );
}

let sequence = 0;

/**
 * Sends one decision and writes down what it answered. Returns the decision as sent (with its answer).
 * `decisionId` names an update (re-sent with the same ID, it must be one decision).
 */
export async function sendDecision(
  r: Real,
  effectId: string,
  kind: DecisionKindSent,
  payload: DecisionPayload,
  options: {
    via: 'signal' | 'update';
    seen: Pick<OperatorView, 'step' | 'attempt' | 'revision'>;
    operator?: string;
    decisionId?: string;
    resent?: SentDecision;
  },
): Promise<SentDecision> {
  const tag = options.resent?.tag ?? `[chaos ${r.prefix} d${++sequence}]`;
  const sent: SentDecision = {
    tag,
    effectId,
    kind,
    via: options.via,
    ...(options.decisionId ? { decisionId: options.decisionId } : {}),
    ...(options.resent ? { resent: true } : {}),
    at: new Date(),
    operator: options.operator ?? OPERATOR,
    step: options.seen.step,
    attempt: options.seen.attempt,
    revision: options.seen.revision,
  };
  r.sent.push(sent);
  const body = { ...payload, reason: options.resent ? payload.reason : `${payload.reason} ${tag}` };
  r.touch(
    effectId,
    `${sent.operator}: ${kind} via ${options.via}${options.resent ? ' (re-sent, same decision ID)' : ''} on step ${sent.step} attempt ${sent.attempt}${payload.externalId ? ` (${payload.externalId})` : ''}`,
  );
  try {
    if (options.via === 'signal') {
      const signal = {
        'approve-retry': approveRetrySignal,
        'confirm-delivery': confirmDeliverySignal,
        abandon: abandonSignal,
      }[kind];
      await r.stack.client.workflow.getHandle(effectId).signal(signal, body);
      sent.answer = 'no answer';
    } else {
      const answer = await r.stack.effects.decide(effectId, kind, body, options.decisionId);
      sent.answer = answer.accepted ? 'accepted' : 'refused';
    }
  } catch (error) {
    sent.answer = 'no answer';
    if (!(error instanceof WorkflowNotFoundError || error instanceof WorkflowUpdateFailedError))
      r.notes.push(`decision ${kind} on ${effectId} via ${options.via}: ${(error as Error).message.slice(0, 200)}`);
  }
  return sent;
}
