// What one run of the effect workflow knows and how it shows it: the view (stage, attempts, readbacks,
// decisions), the attempt counters, the queue of human decisions, and the publishing of the stage to
// the Web UI (search attribute + current details). Every phase works on this one object.
import {
  allHandlersFinished,
  condition,
  makeContinueAsNewFunc,
  setCurrentDetails,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { ReadbackTarget } from '../activities/reconciliation-activities.js';
import type { Decision, RecordedDecisionKind } from '../domain/decisions.js';
import { MAIN_STEP } from '../domain/idempotency-key.js';
import type { EffectStage } from '../domain/stages.js';
import { ledger } from './activity-proxies.js';
import type { DecideResponse, EffectInput, EffectResult, StepInput } from './contract.js';
import { EffectView } from './effect-view.js';
import { effectStageKey, effectStepKey } from './search-attributes.js';

/** Four hours of waiting per run at the default 10-minute readback interval: about 350 history events. */
const DEFAULT_READBACKS_PER_RUN = 24;

/** A human decision waiting to be acted on; an update's caller gets `answer`. */
export interface QueuedDecision {
  ref: string;
  /** The UNKNOWN episode it was sent in: once that episode ends, it is stale. */
  episode: number;
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
  /** Counts the times this run entered UNKNOWN: a decision answers the episode it arrived in. */
  episode = 0;
  /** The outbound steps in the order they leave (v4); `main` alone for a single-step effect. */
  readonly steps: readonly string[];
  private decisionSeq = 0;

  constructor(readonly input: EffectInput) {
    this.view = new EffectView(input);
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
    if (via === 'readback') this.move('reconciled');
    if (this.lastStep) this.move('recorded');
    else if (via === 'human') this.move('reconciled');
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

  /** Records a decision that changes nothing, with why. */
  async refuse(kind: RecordedDecisionKind, actor: string, payload: unknown, why: string): Promise<void> {
    this.view.addDecision({ kind, actor, accepted: false, note: why });
    this.publish();
    await ledger.recordDecision({
      requestRef: this.nextRef(),
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
      await this.refuse(item.decision.kind, item.decision.actor, item.decision, why);
      item.answer?.({ accepted: false, stage: this.view.stage, reason: why });
    }
  }

  /** Ends the run: decisions that arrived but were never acted on are answered, not dropped. */
  async finish(outcome: EffectResult): Promise<EffectResult> {
    for (const item of this.decisions.splice(0)) {
      const why = `superseded: the effect is ${this.view.stage}`;
      await this.refuse(item.decision.kind, item.decision.actor, item.decision, why);
      item.answer?.({ accepted: false, stage: this.view.stage, reason: why });
    }
    await condition(allHandlersFinished);
    return outcome;
  }

  /** A run's history must stay far from Temporal's limits (51,200 events) however long a human takes. */
  longWait(): boolean {
    const limit = this.input.readbacksPerRun ?? DEFAULT_READBACKS_PER_RUN;
    return this.readbacksThisRun >= limit || workflowInfo().continueAsNewSuggested;
  }

  /** Continues as new with what the next run needs; the effect ID and the ledger stay. */
  handOver(): Promise<never> {
    const continueAsNew = makeContinueAsNewFunc<(input: EffectInput) => Promise<EffectResult>>({
      typedSearchAttributes: workflowInfo().typedSearchAttributes,
    });
    return continueAsNew({ ...this.input, carried: this.view.carry(this.automaticRetries) });
  }
}
