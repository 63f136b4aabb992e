// What one run of the effect workflow knows, and how it shows it. Every phase works on this one object: where the
// current step stands (its attempts, revision, automatic retries), the decision windows people answer (the episode,
// a pause, the queued decisions), and the publishing of the stage — current details on every change (they write no
// history), search attributes only when what an operator filters on changes.
import {
  allHandlersFinished,
  condition,
  makeContinueAsNewFunc,
  setCurrentDetails,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { CurrentRelease } from '../activities/effect-activities.js';
import type { ReadbackTarget } from '../activities/reconciliation-activities.js';
import type { Decision, RecordedDecisionKind } from '../domain/decisions.js';
import { MAIN_STEP } from '../domain/idempotency-key.js';
import { canMove, type EffectStage, isTerminal } from '../domain/stages.js';
import { ledger } from './activity-proxies.js';
import type { DecideResponse, EffectInput, EffectResult, StepInput } from './contract.js';
import { EffectView } from './effect-view.js';
import { type Awaiting, effectAwaitingKey, effectStageKey, effectStepKey } from './search-attributes.js';

/** Same-key retries after proven absence, per step, before a person must decide. */
export const MAX_AUTOMATIC_RETRIES = 3;

/** Times a run wakes while it waits before it hands over (continue-as-new): a wait of weeks never fills a history. */
const DEFAULT_WAKES_PER_RUN = 50;

/** A human decision waiting to be acted on; an update's caller gets `answer`. */
export interface QueuedDecision {
  ref: string;
  /** The decision window (UNKNOWN episode or pause) it arrived in: once that is over, it is stale. */
  episode: number;
  /** The step and revision the effect was carrying when it arrived: what it answers. */
  step: string;
  revision: number;
  decision: Decision;
  answer?: (response: DecideResponse) => void;
}

/** A wait in which nothing of ours is in flight, so a person may abandon the effect: `resend` or `worker`. */
export type Pause = Extract<Awaiting, 'resend' | 'worker'>;

/** What the search attributes say now: an upsert is made only when one of these changes. */
interface Shown {
  stage: string | undefined;
  step: string | undefined;
  awaiting: Awaiting | undefined;
}

export class EffectRun {
  readonly view: EffectView;
  readonly decisions: QueuedDecision[] = [];
  /** The outbound steps in the order they leave; `main` alone for a single-step effect. */
  readonly steps: readonly string[];

  // The current step.
  /** Attempts of the current step and revision, by this run and the runs before it. */
  attemptNumber = 0;
  /** A local attempt met a worker that does not host the destination: this run's attempts go as activities. */
  attemptsRemotely = false;
  firstAttemptAt: string | null = null;
  releaseRevision: number;
  /** Same-key retries policy made after proven absence, for the current step (at most MAX_AUTOMATIC_RETRIES). */
  automaticRetries: number;

  // The decision windows.
  /** UNKNOWN episodes and pauses entered so far: a decision answers the one it arrived in. */
  episode = 0;
  /** Set while pausing with nothing in flight: only an abandon is taken then. */
  pause: Pause | undefined;
  /** Revisions the client signalled (revision-released): a run closing as rejected hands over to the new one. */
  revisionSignals = 0;
  /** An operator asked for a look now (look-now): the waiting look is taken at once. */
  lookNowAsked = false;

  /** Times this run woke while waiting: bounded by `readbacksPerRun`, then it hands over. */
  private wakes = 0;
  private decisionSeq = 0;
  private readonly shown: Shown;

  constructor(readonly input: EffectInput) {
    this.view = new EffectView(input, input.carried?.resendPending === true);
    this.automaticRetries = input.carried?.automaticRetries ?? 0;
    this.steps = input.steps?.length ? input.steps.map((s) => s.step) : [MAIN_STEP];
    this.releaseRevision = input.releaseRevision ?? 1;
    const attributes = workflowInfo().typedSearchAttributes;
    this.shown = {
      stage: attributes.get(effectStageKey),
      step: attributes.get(effectStepKey),
      awaiting: attributes.get(effectAwaitingKey) as Awaiting | undefined,
    };
  }

  get stage(): EffectStage {
    return this.view.stage;
  }

  /** The step being carried now: its attempts, looks and decisions are this run's concern. */
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
  get policy(): Pick<
    StepInput,
    'callTimeoutMs' | 'retryAfterProvenAbsence' | 'readbackMaxIntervalMs' | 'keyRetentionSeconds'
  > {
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
   * Starts carrying `step`: attempts and automatic retries count per step and revision. A run that continues
   * another resumes the step it was on with its attempts.
   */
  beginStep(step: string): void {
    const carried = this.input.carried?.attempts.filter((a) => (a.step ?? MAIN_STEP) === step) ?? [];
    if (step !== this.step || carried.length === 0) this.automaticRetries = 0;
    this.view.beginStep(step);
    this.attemptNumber = Math.max(0, ...carried.map((a) => a.attemptNumber));
    this.firstAttemptAt = carried[0]?.startedAt ?? null;
  }

  /**
   * When the current step's key stops deduping (ms since the epoch), or undefined: no expiry to heed, or no
   * attempt yet. Past it a same-key retry is a new request.
   */
  keyExpiresAt(): number | undefined {
    const seconds = this.policy.keyRetentionSeconds;
    if (seconds == null || !this.firstAttemptAt) return undefined;
    return Date.parse(this.firstAttemptAt) + seconds * 1000;
  }

  /** The step's destination honours no key (retention 0): every retry is a second request. */
  get keyless(): boolean {
    return this.policy.keyRetentionSeconds === 0;
  }

  keyExpired(): boolean {
    const at = this.keyExpiresAt();
    return at !== undefined && Date.now() >= at;
  }

  /** Names a signal or update for the ledger: a retried write finds its own row. */
  nextRef(): string {
    this.decisionSeq += 1;
    return `${workflowInfo().runId}:${this.decisionSeq}`;
  }

  /**
   * Shows the effect: the current details always (no history event), the search attributes operators filter on
   * (stage, step, what it waits for) only when they changed — one upsert per change, none on the happy path but
   * the last.
   */
  private publish(awaiting: Awaiting | undefined, stage: EffectStage = this.view.stage): void {
    setCurrentDetails(this.view.details());
    const now: Shown = { stage, step: this.multiStep ? this.step : undefined, awaiting };
    const { shown } = this;
    if (now.stage === shown.stage && now.step === shown.step && now.awaiting === shown.awaiting) return;
    upsertSearchAttributes([
      { key: effectStageKey, value: now.stage as string },
      // A multi-step effect also says which step it is on (`EffectStep = "announce"` in the UI).
      ...(now.step !== undefined && now.step !== shown.step ? [{ key: effectStepKey, value: now.step }] : []),
      ...(now.awaiting !== shown.awaiting ? [{ key: effectAwaitingKey, value: now.awaiting ?? null }] : []),
    ]);
    Object.assign(shown, now);
  }

  /** A move on the way (released → attempted, say): the details follow, nothing is upserted. */
  move(to: EffectStage, awaiting?: string): void {
    this.view.move(to, awaiting);
    setCurrentDetails(this.view.details());
  }

  /** What the effect is doing now, in words (details only). */
  await(awaiting: string): void {
    this.view.await(awaiting);
    setCurrentDetails(this.view.details());
  }

  /** The effect comes to rest waiting for `what`: the details and, where they changed, the search attributes. */
  rest(what: Awaiting, awaiting: string): void {
    this.view.await(awaiting);
    this.publish(what);
  }

  /** Decisions and refusals show at once, in the details. */
  showDetails(): void {
    setCurrentDetails(this.view.details());
  }

  result(reason?: string): EffectResult {
    const s = this.view.status();
    return { effectId: s.effectId, stage: s.stage, externalId: s.externalId, externalUrl: s.externalUrl, reason };
  }

  /**
   * The current step has its object. The effect is recorded with its last step (a look's find passes through
   * reconciled); a step before it leaves the effect attempted (the provider answered) or reconciled (found by a
   * look, or confirmed by a person), and the next step goes.
   */
  settleStep(externalId: string, externalUrl: string | null | undefined, via: 'response' | 'readback' | 'human'): void {
    this.view.setResult(externalId, externalUrl);
    this.view.settleStep();
    // Found (by a look or a person) passes through reconciled, from UNKNOWN. Reached any other way (a decision the
    // stage did not expect) the stage machine is not asked for a move it forbids: that would fail the workflow task
    // on every retry and leave the run silently stuck.
    const found = via !== 'response' && canMove(this.stage, 'reconciled');
    if (found && (via === 'readback' || !this.lastStep)) this.view.move('reconciled');
    if (this.lastStep) this.view.move('recorded');
    this.showDetails();
  }

  /** What a look and a person's confirmation look for: the released package of the current step. */
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
   * Records a decision that changes nothing, with why. `ref`: an update's own reference, so the same decision ID
   * sent again later finds this answer in the ledger.
   */
  async refuse(kind: RecordedDecisionKind, actor: string, payload: unknown, why: string, ref?: string): Promise<void> {
    this.view.addDecision({ kind, actor, accepted: false, note: why });
    this.showDetails();
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

  /** Decisions still queued when their window ended: answered and recorded as stale, never applied later. */
  async refuseStale(why: string): Promise<void> {
    for (const item of this.decisions.splice(0)) {
      await this.refuse(item.decision.kind, item.decision.actor, item.decision, why, this.ownRef(item));
      item.answer?.({ accepted: false, stage: this.view.stage, reason: why });
    }
  }

  /**
   * A queued update is recorded under its own reference (its decision ID: the same ID sent again finds this
   * answer), a signal under a new one.
   */
  ownRef(item: QueuedDecision): string | undefined {
    return item.ref.startsWith('update:') ? item.ref : undefined;
  }

  /**
   * Why a queued decision no longer applies, or undefined. It answers what the effect awaited when it arrived
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
    if (step !== this.step) return `stale: it answered step ${step}, which is settled; ${now}`;
    if (revision !== this.releaseRevision) return `stale: it answered revision ${revision}; ${now}`;
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
    while (outcome.stage === 'rejected' && this.revisionSignals > looked) {
      looked = this.revisionSignals;
      const ended = await this.handOverToRevision(outcome);
      if (ended !== outcome) return ended;
      await condition(allHandlersFinished);
    }
    // The one upsert of a happy path: the stage it ended in (the start said released).
    if (isTerminal(outcome.stage)) this.publish(undefined, outcome.stage);
    return outcome;
  }

  /**
   * The effect is on a later revision than this run's: continue as new on it (a fresh run of that revision, its
   * attempts numbered from 1), or end with what the ledger says when that revision has already ended.
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
        { key: effectAwaitingKey, value: null },
      ]),
    });
    return continueAsNew({ ...input, ...(steps ? { steps } : {}), releaseRevision: current.revision });
  }

  /** A wake while waiting; true when the run has woken often enough that the next run should carry the wait. */
  woke(): boolean {
    this.wakes += 1;
    return this.longWait();
  }

  /** A run's history must stay far from Temporal's limits however long a person takes. */
  longWait(): boolean {
    return this.wakes >= (this.input.readbacksPerRun ?? DEFAULT_WAKES_PER_RUN) || workflowInfo().continueAsNewSuggested;
  }

  /**
   * Continues as new with what the next run needs; the effect ID and the ledger stay. `resendPending`: the run is
   * pausing after "not sent", and the next one sends again instead of looking. `waitingSince`: the looks' schedule
   * goes on where it was.
   */
  handOver(carry: { resendPending?: boolean; waitingSince?: number } = {}): Promise<never> {
    const continueAsNew = makeContinueAsNewFunc<(input: EffectInput) => Promise<EffectResult>>({
      typedSearchAttributes: workflowInfo().typedSearchAttributes,
    });
    const carried = this.view.carry(this.automaticRetries, carry.resendPending);
    return continueAsNew({
      ...this.input,
      carried: {
        ...carried,
        ...(carry.waitingSince ? { waitingSince: new Date(carry.waitingSince).toISOString() } : {}),
      },
    });
  }
}
