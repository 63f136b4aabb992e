// What the workflow knows about its effect, and how it shows it: the status query's answer and the
// markdown "current details" in the Web UI. Pure: stage moves go through the stage machine.
import { idempotencyKeyFor, MAIN_STEP } from '../../domain/idempotency-key.js';
import type { OutcomeClass } from '../../domain/outcomes.js';
import { type EffectStage, nextStage } from '../../domain/stages.js';
import type {
  AttemptView,
  CarriedState,
  DecisionView,
  EffectInput,
  EffectStatus,
  ReadbackView,
  StepView,
} from './contract.js';

/** Readbacks the UI's current details show, and all a run carries to the next: the ledger holds every one. */
const SHOWN_READBACKS = 5;
/** Decisions carried to the next run (refused garbage can pile up; the ledger holds every one). */
const CARRIED_DECISIONS = 20;

export class EffectView {
  private current: EffectStatus;
  private readonly runsBefore: number;

  /** `resumeSending`: the previous run handed over while pausing after "not sent" (v5): this one sends again. */
  constructor(input: EffectInput, resumeSending = false) {
    const carried = input.carried;
    this.runsBefore = carried?.runsBefore ?? 0;
    this.current = {
      effectId: input.effectId,
      // A run that continues a long wait starts where the last one stopped: a run boundary is not a stage.
      stage: carried ? (resumeSending ? 'attempted' : 'unknown') : 'prepared',
      destination: input.destination,
      operation: input.operation,
      summary: input.summary,
      attempts: carried?.attempts ?? [],
      readbacks: carried?.readbacks ?? [],
      decisions: carried?.decisions ?? [],
      // A person's revision of a refused effect: this run sends revision n (absent: the approval's, 1).
      ...(input.releaseRevision ? { revision: input.releaseRevision } : {}),
    };
    const steps = input.steps ?? [];
    if (steps.length > 1) {
      this.current.steps =
        carried?.steps ??
        steps.map(({ step, idempotencyKey }) => ({
          step,
          idempotencyKey: idempotencyKey ?? idempotencyKeyFor(input.effectId, step),
          state: 'waiting',
        }));
      this.current.step = this.current.steps.find((s) => s.state !== 'done')?.step;
    }
  }

  /** The step being carried now (`main` for a single-step effect). */
  get step(): string {
    return this.current.step ?? MAIN_STEP;
  }

  /** Multi-step: the next step is being carried. */
  beginStep(step: string): void {
    const view = this.stepView(step);
    if (!view) return;
    this.current.step = step;
    view.state = 'in_progress';
  }

  /** Multi-step: the current step has its fact. */
  settleStep(): void {
    const view = this.stepView(this.step);
    if (view) view.state = 'done';
  }

  private stepView(step: string): StepView | undefined {
    return this.current.steps?.find((s) => s.step === step);
  }

  /** "step announce (2 of 2): …" for a multi-step effect: what is awaited names its step. */
  private onStep(awaiting: string | undefined): string | undefined {
    const steps = this.current.steps;
    if (!awaiting || !steps) return awaiting;
    const at = steps.findIndex((s) => s.step === this.step);
    return `step ${this.step} (${at + 1} of ${steps.length}): ${awaiting}`;
  }

  /** What the next run needs to go on showing and deciding as this one did. */
  carry(automaticRetries: number, resendPending = false): CarriedState {
    const { attempts, readbacks, decisions } = this.status();
    return {
      attempts,
      readbacks: readbacks.slice(-SHOWN_READBACKS),
      decisions: decisions.slice(-CARRIED_DECISIONS),
      automaticRetries,
      runsBefore: this.runsBefore + 1,
      ...(this.current.steps ? { steps: this.current.steps } : {}),
      ...(resendPending ? { resendPending } : {}),
    };
  }

  /** While a person is awaited: the step, revision and attempt a decision answers (what to type to bind it). */
  decideOn(): EffectStatus['decideOn'] {
    if (this.current.stage !== 'unknown') return undefined;
    const attempt = Math.max(0, ...this.stepAttempts().map((a) => a.attemptNumber));
    return { step: this.step, revision: this.current.revision ?? 1, attempt };
  }

  get stage(): EffectStage {
    return this.current.stage;
  }

  /** Moves the stage (throws on a move the stage machine forbids) and says what is awaited next. */
  move(to: EffectStage, awaiting?: string): void {
    if (to !== this.current.stage) this.current.stage = nextStage(this.current.stage, to);
    this.current.awaiting = this.onStep(awaiting);
  }

  await(awaiting: string | undefined): void {
    this.current.awaiting = this.onStep(awaiting);
  }

  addAttempt(attempt: { attemptNumber: number; idempotencyKey: string; startedAt: string }): void {
    const step = this.current.steps ? { step: this.step } : {};
    this.current.attempts.push({ ...step, ...attempt, outcome: 'in_flight' });
  }

  /** The current step's attempts (a multi-step effect numbers attempts per step). */
  stepAttempts(): AttemptView[] {
    return this.current.attempts.filter((a) => (a.step ?? MAIN_STEP) === this.step);
  }

  settleAttempt(attemptNumber: number, outcome: OutcomeClass, detail: string): void {
    const found = this.stepAttempts().find((a) => a.attemptNumber === attemptNumber);
    if (found) Object.assign(found, { outcome, detail } satisfies Partial<AttemptView>);
  }

  addReadback(readback: ReadbackView): void {
    this.current.readbacks.push(readback);
  }

  addDecision(decision: DecisionView): void {
    this.current.decisions.push(decision);
  }

  /** The current step's object; the effect's result is its main step's. */
  setResult(externalId: string, externalUrl?: string | null): void {
    const view = this.stepView(this.step);
    if (view) Object.assign(view, { externalId }, externalUrl ? { externalUrl } : {});
    if (this.step !== MAIN_STEP) return;
    this.current.externalId = externalId;
    if (externalUrl) this.current.externalUrl = externalUrl;
  }

  status(): EffectStatus {
    const decideOn = this.decideOn();
    return JSON.parse(JSON.stringify(decideOn ? { ...this.current, decideOn } : this.current)) as EffectStatus;
  }

  /** The Current Details line that says what a decision answers and how to bind it. */
  private decideOnLine(): string {
    const on = this.decideOn();
    if (!on) return '';
    const fields = [
      ...(this.current.steps ? [`"step": "${on.step}"`] : []),
      ...(on.revision > 1 ? [`"revision": ${on.revision}`] : []),
      `"attempt": ${on.attempt}`,
    ];
    const what = [
      ...(this.current.steps ? [`step \`${on.step}\``] : []),
      ...(on.revision > 1 ? [`revision ${on.revision}`] : []),
      `attempt ${on.attempt}`,
    ];
    return `Decide on: ${what.join(' · ')} (add ${fields.join(', ')} to your payload to bind your decision to it).`;
  }

  /** Markdown for the Web UI's "current details". */
  details(): string {
    const s = this.current;
    const lines = [
      `**${s.stage.toUpperCase()}** · ${s.destination} \`${s.operation}\` · ${s.summary}`,
      '',
      s.awaiting ? `Awaiting: ${s.awaiting}` : '',
      this.decideOnLine(),
      s.revision
        ? `Revision ${s.revision}: a person's revision of the refused effect (\`effect status\` lists every one).`
        : '',
      this.runsBefore
        ? `Run ${this.runsBefore + 1} of this effect: earlier runs continued as new during a long wait (the ledger keeps every readback).`
        : '',
      s.externalId ? `Result: \`${s.externalId}\`${s.externalUrl ? ` (${s.externalUrl})` : ''}` : '',
      '',
    ];
    if (s.steps) {
      lines.push('| step | idempotency key | state | object |', '|---|---|---|---|');
      for (const step of s.steps)
        lines.push(
          `| ${step.step === s.step && step.state !== 'done' ? `**${step.step}** ←` : step.step} | \`${step.idempotencyKey}\` | ${step.state} | ${step.externalId ?? ''} |`,
        );
      lines.push('');
    }
    if (s.attempts.length) {
      lines.push('| # | idempotency key | started | outcome |', '|---|---|---|---|');
      for (const a of s.attempts) {
        lines.push(
          `| ${a.attemptNumber} | \`${a.idempotencyKey}\` | ${a.startedAt} | ${a.outcome}${a.detail ? `: ${a.detail}` : ''} |`,
        );
      }
    }
    if (s.readbacks.length) {
      lines.push('', '| readback at | outcome | coverage | how |', '|---|---|---|---|');
      for (const r of s.readbacks.slice(-SHOWN_READBACKS))
        lines.push(`| ${r.at} | ${r.outcome} | ${r.coverage} | ${r.method}: ${r.reason} |`);
    }
    if (s.decisions.length) {
      lines.push('', '| decision | by | accepted | note |', '|---|---|---|---|');
      for (const d of s.decisions)
        lines.push(`| ${d.kind} | ${d.actor || '(none)'} | ${d.accepted ? 'yes' : 'no'} | ${d.note} |`);
    }
    return lines.filter((line, i, all) => line !== '' || (i > 0 && all[i - 1] !== '')).join('\n');
  }
}
