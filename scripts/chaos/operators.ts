// Two operators on one effect, and a decision re-sent across runs. What issue 19 found by reading: a second
// decision queued while the first settles the step outlives it, and is applied to the next step (or the next
// UNKNOWN episode); an update re-sent with the same decision ID after a continue-as-new counts twice. The
// checker (decision-checks.ts) judges each decision against the step and episode it arrived in.
import { randomUUID } from 'node:crypto';
import { MAIN_STEP } from '../../domain/idempotency-key.js';
import { waitsForPerson } from '../audit/audit.js';
import {
  buildRequest,
  bump,
  type EffectKind,
  isTerminalStage,
  type Model,
  type ModelEffect,
  mayUse,
  NetFault,
  newEffect,
  pick,
  type Real,
  Step,
  TITLES,
  use,
} from './commands.js';
import {
  type DecisionKindSent,
  type DecisionPayload,
  liveView,
  lookAt,
  OPERATOR,
  type OperatorView,
  onDashboard,
  type SentDecision,
  sendDecision,
} from './operator.js';

const SECOND_OPERATOR = 'ops-2@example.com';
export type SecondDecision = DecisionKindSent;
/**
 * When the second operator acts: this many ms after the first, while a readback runs, or at a barrier (both
 * sent while every worker is stopped, so the workflow takes both in one task: the second is queued for sure).
 */
export type Gap = number | 'during-readback' | 'barrier';

const gapText = (gap: Gap) =>
  typeof gap === 'number' ? `${gap} ms later` : gap === 'barrier' ? 'at a barrier' : 'during the readback';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `probe` every `everyMs` until it holds or `ms` passed; returns whether it held. */
/**
 * How long a step's person waits to be asked before giving up (and saying so in the run's notes). Not the
 * provider's pace but the stack's: after a dev-server restart a readback queue's registration with its worker
 * deployment can stall a minute, and the look that asks the person comes that much later (seed 2026120681: asked
 * 62 s after the churn, when the person had waited 30 s and left the post without its fact).
 */
export const PERSON_PATIENCE_MS = 180_000;

/**
 * Waits for an effect to ask a person (`asks`): true once it does; false at once when it ends without asking (the
 * ledger's stage is terminal: a look found the object), or after PERSON_PATIENCE_MS, with a note in the run's notes.
 */
export async function whenAsked(
  r: Real,
  effectId: string,
  asks: () => Promise<boolean>,
  { who, everyMs = 500 }: { who: string; everyMs?: number },
): Promise<boolean> {
  let ended = false;
  const answered = await until(
    async () => {
      if (await asks()) return true;
      const [row] = await r.stack.ledger.sql<{ stage: string }[]>`
        SELECT stage FROM effects WHERE effect_id = ${effectId}`;
      ended = row !== undefined && isTerminalStage(row.stage);
      return ended;
    },
    PERSON_PATIENCE_MS,
    everyMs,
  );
  if (!answered) r.notes.push(`${who}: ${effectId} never asked a person within ${PERSON_PATIENCE_MS / 1000} s`);
  return answered && !ended;
}

export async function until(probe: () => Promise<boolean>, ms: number, everyMs = 100): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await probe().catch(() => false)) return true;
    if (Date.now() >= deadline) return false;
    await sleep(everyMs);
  }
}

/** The first operator's decision, from the dashboard: confirm the object found there, else approve a retry. */
async function dashboardDecision(
  r: Real,
  seen: OperatorView,
): Promise<{ kind: DecisionKindSent; payload: DecisionPayload }> {
  const found = await onDashboard(r, seen);
  return found
    ? {
        kind: 'confirm-delivery',
        payload: { actor: OPERATOR, reason: 'found it on the provider dashboard', externalId: found.id },
      }
    : { kind: 'approve-retry', payload: { actor: OPERATOR, reason: 'checked the provider dashboard: nothing there' } };
}

/**
 * Operator one decides from the dashboard; operator two, looking at the same screen, sends `second` a few
 * ms later or while the readback that follows runs. Each may bind its decision to the attempt it saw.
 */
export async function twoOperators(
  r: Real,
  effectId: string,
  second: SecondDecision,
  gap: Gap,
  vias: ['signal' | 'update', 'signal' | 'update'],
  bindAttempt: boolean,
  /** The first operator refreshes the dashboard for a few seconds until the object shows (then confirms it). */
  waitForObject = false,
): Promise<SentDecision[]> {
  // The effect may be mid-readback: look again for a few seconds until it asks for a person.
  await until(
    async () => {
      const live = await liveView(r, effectId, 1000);
      return !!live && waitsForPerson({ status: 'RUNNING', awaiting: live.awaiting ?? '' });
    },
    4000,
    100,
  );
  const seen = await lookAt(r, effectId);
  if (!seen.live || !waitsForPerson({ status: 'RUNNING', awaiting: seen.live.awaiting ?? '' })) {
    bump(r, 'two operators skipped (no longer waiting for a person)');
    return [];
  }
  if (waitForObject) await until(async () => !!(await onDashboard(r, seen)), 6000, 200);
  const first = await dashboardDecision(r, seen);
  // Bound as the status's `decideOn` says: an attempt number alone is refused as ambiguous on a further step or a
  // revision (attempts are numbered per step and revision), and the effect would wait for a person nobody sends.
  const bind =
    bindAttempt && seen.attempt > 0 ? { step: seen.step, revision: seen.revision, attempt: seen.attempt } : {};
  let secondPayload: DecisionPayload = { actor: SECOND_OPERATOR, reason: `${second}: my call`, ...bind };
  let secondKind = second;
  if (second === 'confirm-delivery') {
    const found = await onDashboard(r, seen);
    if (found) secondPayload = { ...secondPayload, externalId: found.id };
    else secondKind = 'abandon';
  }
  bump(r, `two operators: ${first.kind} then ${secondKind} ${gapText(gap)}`);
  r.log(
    `operators: ${effectId}${seen.step === MAIN_STEP ? '' : ` (step ${seen.step})`} attempt ${seen.attempt}: ${first.kind}, then ${secondKind} ${gapText(gap)}`,
  );
  const decisionId = (via: string) => (via === 'update' ? { decisionId: randomUUID() } : {});
  const send = () =>
    sendDecision(
      r,
      effectId,
      first.kind,
      { ...first.payload, ...bind },
      { via: vias[0], seen, ...decisionId(vias[0]) },
    );
  const sendSecond = () =>
    sendDecision(r, effectId, secondKind, secondPayload, {
      via: vias[1],
      seen,
      operator: SECOND_OPERATOR,
      ...decisionId(vias[1]),
    });
  if (gap === 'barrier') {
    const both = await r.stack.withWorkersStopped(async () => {
      const sent = [send()];
      await sleep(50);
      sent.push(sendSecond());
      await sleep(400);
      return sent;
    }, 1500);
    return Promise.all(both);
  }
  const one = send();
  if (gap === 'during-readback')
    await until(async () => /^readback/.test((await liveView(r, effectId, 1000))?.awaiting ?? ''), 5000, 20);
  else await sleep(gap);
  return Promise.all([one, sendSecond()]);
}

/** Two operators on whichever effect of the run waits in UNKNOWN now (multi-step ones first, when asked). */
export class TwoOperators extends Step {
  constructor(
    readonly second: SecondDecision,
    readonly gap: Gap,
    readonly vias: ['signal' | 'update', 'signal' | 'update'],
    readonly bindAttempt: boolean,
    readonly index: number,
  ) {
    super();
  }
  override check(m: Readonly<Model>) {
    return m.effects.length > 0;
  }
  async run(m: Model, r: Real) {
    const ours = new Map(m.effects.map((e) => [e.effectId, e]));
    const unknown = (await r.stack.effects.listByStage('unknown', 1000)).filter((e) => ours.has(e.effectId));
    const multi = unknown.filter((e) => isMultiStep(ours.get(e.effectId)));
    const chosen = pick(multi.length ? multi : unknown, this.index);
    if (!chosen) {
      bump(r, 'two operators skipped (no unknown effect)');
      return;
    }
    await twoOperators(r, chosen.effectId, this.second, this.gap, this.vias, this.bindAttempt);
  }
  toString() {
    return `two-operators(then ${this.second} ${gapText(this.gap)}, ${this.vias.join('/')}${this.bindAttempt ? ', bound to the attempt' : ''}, #${this.index})`;
  }
}

const isMultiStep = (e: ModelEffect | undefined) => e?.kind === 'task-announced' || e?.kind === 'invoice';

/** What holds a multi-step effect's first step past its call timeout, and what hits its later step. */
export type StepFault =
  | {
      on: 'provider';
      kind:
        | 'delay_before_commit'
        | 'drop_after_commit'
        | 'status_500_after_commit'
        | 'status_429_before_commit'
        | 'fail_before_commit';
      path: string;
      factor: number;
      /** Copies queued: 2 makes the approved retry meet the same fault. */
      count?: number;
    }
  | { on: 'network'; link: 'smtp' | 'orders'; kind: 'latency' | 'drop' | 'reset' | 'cut' | 'refuse'; ms: number };

async function arm(r: Real, fault: StepFault): Promise<void> {
  if (fault.on === 'provider') {
    const delayMs = Math.round(r.stack.options.callTimeoutMs * fault.factor);
    await r.stack.simulator.fault(fault.kind, { path: fault.path, delayMs, count: fault.count ?? 1 });
  } else {
    await new NetFault(fault.link, fault.kind, fault.ms).run({} as Model, r);
  }
  bump(r, `fault ${fault.on === 'provider' ? fault.kind : `network ${fault.kind} on ${fault.link}`}`);
}

const faultText = (f: StepFault) =>
  f.on === 'provider'
    ? `${f.kind}${(f.count ?? 1) > 1 ? ` ×${f.count}` : ''} on ${f.path}`
    : `network ${f.kind} on ${f.link} for ${f.ms} ms`;

/**
 * A multi-step effect whose steps meet faults: the first step held past its call timeout (UNKNOWN, a person
 * invited to decide while the request may still be in flight), the later step faulted the moment the first
 * has its fact. Two operators decide on the first step; the second decision must not reach the later one.
 */
export class CrossStepDecisions extends Step {
  constructor(
    readonly kind: 'task-announced' | 'invoice',
    readonly first: StepFault | null,
    readonly later: StepFault | null,
    readonly second: SecondDecision | null,
    readonly gap: Gap,
    readonly vias: ['signal' | 'update', 'signal' | 'update'],
    readonly shortRuns: boolean,
    readonly waitForObject: boolean,
  ) {
    super();
  }
  override check(m: Readonly<Model>) {
    return m.effects.length < m.limits.effects && mayUse(m, 'cross-step');
  }
  async run(m: Model, r: Real) {
    use(m, 'cross-step');
    const n = m.next++;
    const effectId = `${r.prefix}-${n}`;
    const request = buildRequest(effectId, this.kind as EffectKind, n, pick(TITLES, n) ?? 'Prepare preview');
    m.effects.push({
      effectId,
      kind: this.kind,
      request,
      origin: 'approved',
      ...(this.shortRuns ? { shortRuns: true } : {}),
    });
    bump(r, 'approvals');
    bump(r, 'multi-step approvals with step faults');
    if (this.first) await arm(r, this.first);
    const client = this.shortRuns ? r.stack.effectsShortRuns : r.stack.effects;
    try {
      await client.approve(request);
    } catch (error) {
      r.notes.push(`approve ${effectId} failed: ${(error as Error).message}`);
      return;
    }
    r.touch(effectId, `approved with ${this.first ? faultText(this.first) : 'no fault'} on its first step`);
    // The later step's fault, armed the moment the first step has its fact (in the background).
    if (this.later) {
      const later = this.later;
      r.track(
        (async () => {
          const settled = await until(
            async () => {
              const rows = await r.stack.ledger.sql`
              SELECT 1 FROM facts WHERE effect_id = ${effectId} AND step = ${MAIN_STEP}`;
              return rows.length > 0;
            },
            40_000,
            25,
          );
          if (!settled) return;
          await arm(r, later);
          r.touch(effectId, `${faultText(later)} armed for its later step`);
        })(),
      );
    }
    if (!this.second) return;
    const waiting = await until(
      async () => {
        const live = await liveView(r, effectId, 1000);
        return !!live && waitsForPerson({ status: 'RUNNING', awaiting: live.awaiting ?? '' });
      },
      30_000,
      100,
    );
    if (!waiting) {
      bump(r, 'two operators skipped (the first step never asked for a person)');
      return;
    }
    await twoOperators(r, effectId, this.second, this.gap, this.vias, false, this.waitForObject);
  }
  toString() {
    const second = this.second ? `, two operators (then ${this.second} ${gapText(this.gap)})` : '';
    return `cross-step(${this.kind}${this.shortRuns ? ' short runs' : ''}${this.waitForObject ? ', first operator waits for the object' : ''}, first: ${this.first ? faultText(this.first) : '-'}, later: ${this.later ? faultText(this.later) : '-'}${second})`;
  }
}

/**
 * A decision re-sent with the same decision ID after its run continued as new (a client that timed out and
 * tried again): one decision. A key-less post whose sends fail before the provider stores anything waits for
 * a person; the retry approved fails the same way, the run continues as new after two readbacks, and the
 * same update arrives again.
 */
export class ResentAcrossRuns extends Step {
  constructor(readonly kind: 'approve-retry' | 'abandon') {
    super();
  }
  override check(m: Readonly<Model>) {
    return m.effects.length < m.limits.effects && mayUse(m, 'resent');
  }
  async run(m: Model, r: Real) {
    use(m, 'resent');
    const { effectId, request } = newEffect(m, r, 'post', 'Launch post', { shortRuns: true });
    bump(r, 'approvals');
    // The first send and the approved retry both fail before anything is stored.
    await r.stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts', count: 2 });
    try {
      await r.stack.effectsShortRuns.approve(request);
    } catch (error) {
      r.notes.push(`approve ${effectId} failed: ${(error as Error).message}`);
      return;
    }
    const handle = r.stack.client.workflow.getHandle(effectId);
    const waiting = () =>
      until(
        async () => {
          const live = await liveView(r, effectId, 1000);
          return !!live && /human decision/.test(live.awaiting ?? '');
        },
        30_000,
        200,
      );
    if (!(await waiting())) return;
    const seen = await lookAt(r, effectId);
    const runId = (await handle.describe()).runId;
    const decisionId = randomUUID();
    const payload = { actor: OPERATOR, reason: 'checked the feed: nothing there' };
    bump(r, `decisions re-sent across a continue-as-new (${this.kind})`);
    const first = await sendDecision(r, effectId, this.kind, payload, { via: 'update', seen, decisionId });
    // The run continues as new (two readbacks while a person is awaited); then the same update again.
    const handedOver = await until(async () => (await handle.describe()).runId !== runId, 45_000, 250);
    // The client retries once the new run asks for a person again (an update it cannot take now is refused).
    if (handedOver) await waiting();
    r.log(
      `operator: ${effectId} ${this.kind} ${first.answer}; ${handedOver ? 'continued as new; re-sending the same decision ID' : 'did not continue as new; re-sending anyway'}`,
    );
    await sendDecision(
      r,
      effectId,
      this.kind,
      { ...payload, reason: `${payload.reason} ${first.tag}` },
      {
        via: 'update',
        seen: await lookAt(r, effectId),
        decisionId,
        resent: first,
      },
    );
  }
  toString() {
    return `resent-across-runs(${this.kind})`;
  }
}
