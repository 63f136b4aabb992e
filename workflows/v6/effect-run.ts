// What one run of the effect workflow knows and how it shows it: the view (stage, attempts, readbacks,
// decisions), the attempt counters, the queue of human decisions, and the publishing of the stage to
// the Web UI (search attribute + current details). Every phase works on this one object.
import {
  allHandlersFinished,
  condition,
  makeContinueAsNewFunc,
  patched,
  setCurrentDetails,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { CurrentRelease } from '../../activities/effect-activities.js';
import type { ReadbackTarget } from '../../activities/reconciliation-activities.js';
import type { Decision, RecordedDecisionKind } from '../../domain/decisions.js';
import { MAIN_STEP } from '../../domain/idempotency-key.js';
import { canMove, type EffectStage, isTerminal } from '../../domain/stages.js';
import { ledger } from './activity-proxies.js';
import type { DecideResponse, EffectInput, EffectResult, StepInput } from './contract.js';
import { EffectView } from './effect-view.js';
import { DECISIONS_BOUND_PATCH, NOT_SENT_CARRIED_PATCH, REVISION_HANDOVER_PATCH } from './patches.js';
import { effectStageKey, effectStepKey } from './search-attributes.js';

/** Four hours of waiting per run at the default 10-minute readback interval: about 350 history events. */
const DEFAULT_READBACKS_PER_RUN = 24;

/** A human decision waiting to be acted on; an update's caller gets `answer`. */
export interface QueuedDecision {
  ref: string;
  /** The UNKNOWN episode (v5: or not-sent pause) it was sent in: once that episode ends, it is stale. */
  episode: number;
  /** v5: the step and revision the effect was carrying when it arrived: what it answers. */
  step?: string;
  revision?: number;
  decision: Decision;
  answer?: (response: DecideResponse) => void;
}

export class EffectRun {
  readonly view: EffectView;
  readonly decisions: QueuedDecision[] = [];
  /** Attempts made so far, by this run and the runs before it. */
  attemptNumber = 0;
  firstAttemptAt: string | null = null;
  releaseRevision = 0;
  /** Same-key retries policy made after proven absence (counted per effect, carried across runs). */
  automaticRetries: number;
  readbacksThisRun = 0;
  /** Waiting to resend after "not sent": an abandon decision is taken then (nothing is in flight). */
  resendPending = false;
  /** Attempts in a row no worker that took them could make (the destination not hosted there): the wait's backoff. */
  notHostedWaits = 0;
  /** This run takes v3's path (set once, from the patch marker, at the start). */
  v3 = false;
  /** Counts the times this run entered UNKNOWN (v5: or a not-sent pause): a decision answers the episode it arrived in. */
  episode = 0;
  /** How often a person's revision of the refused effect was signalled (the client's revision-released). */
  revisionSignals = 0;
  /** v5: this run continues a run that handed over while pausing after "not sent": it sends again, no readback. */
  resumesSending: boolean;
  /** The outbound steps in the order they leave (v4); `main` alone for a single-step effect. */
  readonly steps: readonly string[];
  private decisionSeq = 0;

  constructor(readonly input: EffectInput) {
    this.resumesSending = input.carried?.resendPending === true && patched(NOT_SENT_CARRIED_PATCH);
    this.view = new EffectView(input, this.resumesSending);
    this.automaticRetries = input.carried?.automaticRetries ?? 0;
    this.steps = input.steps?.length ? input.steps.map((s) => s.step) : [MAIN_STEP];
  }

  get stage(): EffectStage {
    return this.view.stage;
  }

  /** The step being carried now: its attempts, readbacks and decisions are this run's concern. */
  get step(): string {
    return this.view.step;
  }

  get multiStep(): boolean {
    return this.steps.length > 1;
  }

  get lastStep(): boolean {
    return this.step === this.steps.at(-1);
  }

  /** The current step's destination policy (a step may go elsewhere than the effect's main destination). */
  get policy(): Pick<StepInput, 'callTimeoutMs' | 'retryAfterProvenAbsence' | 'readbackMaxIntervalMs'> {
    return this.input.steps?.find((s) => s.step === this.step) ?? this.input;
  }

  /** The current step's destination. */
  get destination(): string {
    return this.input.steps?.find((s) => s.step === this.step)?.destination ?? this.input.destination;
  }

  /** The steps still to carry, in order: a continued run resumes at the step it was on. */
  stepsToGo(): string[] {
    const done = new Set(this.input.carried?.steps?.filter((s) => s.state === 'done').map((s) => s.step));
    return this.steps.filter((step) => !done.has(step));
  }

  /**
   * v4: starts carrying `step`. Attempts and automatic retries count per step; a step the previous run
   * was on (continue-as-new) resumes with its attempts.
   */
  beginStep(step: string): void {
    if (!this.multiStep) return;
    const carried = this.input.carried?.attempts.filter((a) => (a.step ?? MAIN_STEP) === step) ?? [];
    if (step !== this.step || carried.length === 0) this.automaticRetries = 0;
    this.view.beginStep(step);
    this.attemptNumber = Math.max(0, ...carried.map((a) => a.attemptNumber));
    this.firstAttemptAt = carried[0]?.startedAt ?? null;
  }

  /** Names a signal or update for the ledger: a retried write finds its own row. */
  nextRef(): string {
    this.decisionSeq += 1;
    return `${workflowInfo().runId}:${this.decisionSeq}`;
  }

  publish(): void {
    upsertSearchAttributes([
      { key: effectStageKey, value: this.view.stage },
      // A multi-step effect also says which step it is on (`EffectStep = "announce"` in the UI).
      ...(this.multiStep ? [{ key: effectStepKey, value: this.step }] : []),
    ]);
    setCurrentDetails(this.view.details());
  }

  move(to: EffectStage, awaiting?: string): void {
    this.view.move(to, awaiting);
    this.publish();
  }

  await(awaiting: string): void {
    this.view.await(awaiting);
    this.publish();
  }

  result(reason?: string): EffectResult {
    const s = this.view.status();
    return { effectId: s.effectId, stage: s.stage, externalId: s.externalId, externalUrl: s.externalUrl, reason };
  }

  /**
   * The current step has its object. The effect is recorded with its last step (a readback's find passes
   * through reconciled); a step before it leaves the effect attempted (the provider answered) or
   * reconciled (found by readback, or confirmed by a person), and the next step goes.
   */
  settleStep(externalId: string, externalUrl: string | null | undefined, via: 'response' | 'readback' | 'human'): void {
    this.view.setResult(externalId, externalUrl);
    this.view.settleStep();
    // Found (by readback or a person) passes through reconciled, from UNKNOWN. Reached any other way (a decision
    // the stage did not expect) the stage machine is not asked for a move it forbids: that would fail the
    // workflow task on every retry and leave the run silently stuck.
    const found = via !== 'response' && canMove(this.stage, 'reconciled');
    if (via === 'readback' && found) this.move('reconciled');
    if (this.lastStep) this.move('recorded');
    else if (via === 'human' && found) this.move('reconciled');
    else this.publish();
  }

  /** What readback and a human's confirmation look for: the released package of the current step. */
  target(): ReadbackTarget {
    return {
      effectId: this.input.effectId,
      step: this.step,
      releaseRevision: this.releaseRevision,
      since: this.firstAttemptAt ?? '',
      callTimeoutMs: this.policy.callTimeoutMs,
      ...(this.input.absenceGraceMs === undefined ? {} : { absenceGraceMs: this.input.absenceGraceMs }),
      ...(this.multiStep ? { lastStep: this.lastStep } : {}),
    };
  }

  /**
   * Records a decision that changes nothing, with why. `ref`: an update's own reference (v5), so the same
   * decision ID sent again later finds this answer in the ledger.
   */
  async refuse(kind: RecordedDecisionKind, actor: string, payload: unknown, why: string, ref?: string): Promise<void> {
    this.view.addDecision({ kind, actor, accepted: false, note: why });
    this.publish();
    const generated = this.nextRef();
    await ledger.recordDecision({
      requestRef: ref ?? generated,
      effectId: this.input.effectId,
      kind,
      actor,
      reason: '',
      payload,
      accepted: false,
      rejectionReason: why,
    });
  }

  /** Decisions still queued when their UNKNOWN episode ended: answered and recorded as stale, never applied later. */
  async refuseStale(why: string): Promise<void> {
    for (const item of this.decisions.splice(0)) {
      await this.refuse(item.decision.kind, item.decision.actor, item.decision, why, this.ownRef(item));
      item.answer?.({ accepted: false, stage: this.view.stage, reason: why });
    }
  }

  /**
   * A queued update is recorded under its own reference (its decision ID: the same ID sent again finds this
   * answer), a signal under a new one. Only what the activity is given changes, not the commands: no patch.
   */
  ownRef(item: QueuedDecision): string | undefined {
    return item.ref.startsWith('update:') ? item.ref : undefined;
  }

  /** v5: decisions are bound to the step, revision and episode they arrived in (patches.ts). */
  decisionsBound(): boolean {
    return this.v3 && patched(DECISIONS_BOUND_PATCH);
  }

  /**
   * v5: why a queued decision no longer applies, or undefined. It answers what the effect awaited when it arrived
   * (step, revision, episode) and whatever it names itself; an attempt number alone is ambiguous once attempts
   * restart per step or revision.
   */
  staleness({ decision, episode, step, revision }: QueuedDecision): string | undefined {
    const now = `the effect is on ${this.multiStep ? `step ${this.step}, ` : ''}${this.releaseRevision > 1 ? `revision ${this.releaseRevision}, ` : ''}attempt ${this.attemptNumber}`;
    if (decision.step !== undefined && decision.step !== this.step)
      return `stale: it answers step ${decision.step}; ${now}`;
    if (decision.revision !== undefined && decision.revision !== this.releaseRevision)
      return `stale: it answers revision ${decision.revision}; ${now}`;
    if (decision.attempt !== undefined) {
      if (this.multiStep && decision.step === undefined)
        return `ambiguous: attempts are numbered per step; name the step too ("step": "${this.step}", "attempt": ${decision.attempt})`;
      if (this.releaseRevision > 1 && decision.revision === undefined)
        return `ambiguous: attempts are numbered per revision; name the revision too ("revision": ${this.releaseRevision}, "attempt": ${decision.attempt})`;
      if (decision.attempt !== this.attemptNumber) return `stale: it answers attempt ${decision.attempt}; ${now}`;
    }
    if (step !== undefined && step !== this.step) return `stale: it answered step ${step}, which is settled; ${now}`;
    if (revision !== undefined && revision !== this.releaseRevision)
      return `stale: it answered revision ${revision}; ${now}`;
    if (episode !== this.episode)
      return `stale: it answered ${this.multiStep ? `step ${this.step}'s ` : ''}UNKNOWN episode ${episode}, which is over; send it again if it still holds`;
    return undefined;
  }

  /** Ends the run: decisions that arrived but were never acted on are answered, not dropped. */
  async finish(outcome: EffectResult): Promise<EffectResult> {
    for (const item of this.decisions.splice(0)) {
      const why = `superseded: the effect is ${this.view.stage}`;
      await this.refuse(item.decision.kind, item.decision.actor, item.decision, why, this.ownRef(item));
      item.answer?.({ accepted: false, stage: this.view.stage, reason: why });
    }
    await condition(allHandlersFinished);
    // A person revised the refused effect while this run was closing (the client signalled it): hand the new
    // revision to a run of its own rather than close and leave it to the reconciler. A signal that comes in while
    // the ledger is read means another look (Temporal does not let the run close past an unhandled signal).
    let looked = 0;
    while (outcome.stage === 'rejected' && this.revisionSignals > looked && patched(REVISION_HANDOVER_PATCH)) {
      looked = this.revisionSignals;
      const ended = await this.handOverToRevision(outcome);
      if (ended !== outcome) return ended;
      await condition(allHandlersFinished);
    }
    return outcome;
  }

  /**
   * v5: the effect is on a later revision than this run's: continue as new on it (a fresh run of that revision,
   * its attempts numbered from 1), or end with what the ledger says when that revision has already ended.
   */
  async handOverToRevision(ending: EffectResult): Promise<EffectResult> {
    await this.refuseStale('superseded: a person revised the effect; decide again on the new revision');
    const current: CurrentRelease = await ledger.currentRelease(this.input.effectId);
    if (current.revision <= this.releaseRevision) return ending;
    if (isTerminal(current.stage as EffectStage))
      return {
        ...this.result(`revision ${current.revision} ended ${current.stage}`),
        stage: current.stage as EffectStage,
      };
    await condition(allHandlersFinished);
    const steps = this.input.steps?.map((s) => ({ ...s, idempotencyKey: current.keys[s.step] ?? s.idempotencyKey }));
    const { carried: _carried, ...input } = this.input;
    const continueAsNew = makeContinueAsNewFunc<(input: EffectInput) => Promise<EffectResult>>({
      // The next run starts released, as a revision's run started by the client does.
      typedSearchAttributes: workflowInfo().typedSearchAttributes.updateCopy([
        { key: effectStageKey, value: 'released' },
      ]),
    });
    return continueAsNew({ ...input, ...(steps ? { steps } : {}), releaseRevision: current.revision });
  }

  /** A run's history must stay far from Temporal's limits (51,200 events) however long a human takes. */
  longWait(): boolean {
    const limit = this.input.readbacksPerRun ?? DEFAULT_READBACKS_PER_RUN;
    return this.readbacksThisRun >= limit || workflowInfo().continueAsNewSuggested;
  }

  /**
   * Continues as new with what the next run needs; the effect ID and the ledger stay. `resendPending` (v5): the
   * run is pausing after "not sent", and the next one sends again instead of reading back.
   */
  handOver(resendPending = false): Promise<never> {
    const continueAsNew = makeContinueAsNewFunc<(input: EffectInput) => Promise<EffectResult>>({
      typedSearchAttributes: workflowInfo().typedSearchAttributes,
    });
    return continueAsNew({ ...this.input, carried: this.view.carry(this.automaticRetries, resendPending) });
  }
}
