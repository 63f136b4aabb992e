// Races the generator makes likely instead of hoping for: revisions submitted while the refused run is still
// closing (seed 913370001's stuck effect: a replay of the seed came back clean), and a retry an operator
// approves while a post may still be in flight, read back by a worker whose clock runs ahead of PostgreSQL's.
//
// The barrier around a run's close: the ledger shows the effect `rejected` (the attempt activity recorded the
// provider's 400) while its run has not closed yet. At that moment every worker process is stopped (SIGSTOP),
// so the run cannot close, and the revisions go in; then the workers continue. Every revision then meets a
// run that is still open — the interleaving the seed found once, now on every round.
import { randomUUID } from 'node:crypto';
import type { EffectLedgerClient } from '../../client/effect-ledger-client.js';
import {
  buildRequest,
  bump,
  type EffectKind,
  type Model,
  type ModelEffect,
  mayUse,
  newEffect,
  type Real,
  Step,
  submitRevision,
  use,
} from './commands.js';
import { asksPerson, liveView, lookAt, OPERATOR, sendDecision } from './operator.js';
import { until } from './operators.js';
import { SHORT_GRACE_MS } from './stack.js';

/** When the revisions go in, against the refused run's close. */
export type RaceBarrier = 'workers-stopped' | 'at-once' | 'after-close';

export class RevisionRace extends Step {
  constructor(
    /** Rounds of refusal and revision on one effect: 2 means revision 2 is refused too, and raced again. */
    readonly rounds: 1 | 2,
    readonly copies: number,
    readonly barrier: RaceBarrier,
    /** An operator's approve-retry sent with the revisions (a late decision on a refused effect). */
    readonly lateDecision: boolean,
    /** How long the workers stay stopped once the revisions went in. */
    readonly holdMs: number,
  ) {
    super();
  }
  override check(m: Readonly<Model>) {
    return m.effects.length < m.limits.effects && mayUse(m, 'revision-race');
  }
  async run(m: Model, r: Real) {
    use(m, 'revision-race');
    const n = m.next++;
    const effectId = `${r.prefix}-${n}`;
    const kind: EffectKind = this.rounds === 2 ? 'refund-refused-twice' : 'refund-refused';
    const request = buildRequest(effectId, kind, n, 'Prepare preview');
    const effect: ModelEffect = { effectId, kind, request, origin: 'approved' };
    m.effects.push(effect);
    bump(r, 'approvals');
    bump(r, `revision races (${this.barrier})`);
    try {
      await r.stack.effects.approve(request);
    } catch (error) {
      r.notes.push(`approve ${effectId} failed: ${(error as Error).message}`);
      return;
    }
    for (let round = 1; round <= this.rounds; round++) {
      const revision = round;
      // The refusal of `revision` is in the ledger: the refused run is closing now.
      const rejected = await until(
        async () => {
          const rows = await r.stack.ledger.sql<{ stage: string; revision: number }[]>`
            SELECT stage, revision FROM effects WHERE effect_id = ${effectId}`;
          return rows[0]?.stage === 'rejected' && rows[0].revision === revision;
        },
        30_000,
        3,
      );
      if (!rejected) {
        r.notes.push(`revision race on ${effectId}: revision ${revision} was never rejected`);
        return;
      }
      const race = async () => {
        const decision = this.lateDecision
          ? sendDecision(
              r,
              effectId,
              'approve-retry',
              { actor: OPERATOR, reason: 'late: retry it' },
              { via: 'update', seen: { step: 'main', attempt: 1, revision }, decisionId: randomUUID() },
            )
          : Promise.resolve(undefined);
        const created = await submitRevision(r, effect, this.copies);
        if (this.barrier === 'workers-stopped') await new Promise((resolve) => setTimeout(resolve, this.holdMs));
        return { created, decision };
      };
      let outcome: Awaited<ReturnType<typeof race>>;
      if (this.barrier === 'workers-stopped') outcome = await r.stack.withWorkersStopped(race, this.holdMs + 1000);
      else {
        if (this.barrier === 'after-close')
          await until(async () => (await liveView(r, effectId, 500)) === null, 10_000, 20);
        outcome = await race();
      }
      const open = await r.stack.client.workflow
        .getHandle(effectId)
        .describe()
        .then((d) => d.status.name)
        .catch(() => 'NOT_FOUND');
      r.touch(
        effectId,
        `revision race round ${round} (${this.barrier}): ${outcome.created} created; its workflow now ${open}`,
      );
      await outcome.decision;
      if (outcome.created === 0) return;
    }
  }
  toString() {
    return `revision-race(${this.rounds} round(s), ×${this.copies}, ${this.barrier}${this.barrier === 'workers-stopped' ? ` ${this.holdMs} ms` : ''}${this.lateDecision ? ', with a late decision' : ''})`;
  }
}

/**
 * A key-less post held by the provider past the call timeout (it commits `commitAfter` of the in-flight
 * window later), and an operator who approves a retry the moment the effect asks for a person. The workflow
 * must not let the retry leave while the first post may still land: the window is judged against the
 * attempt row's start (PostgreSQL's clock), and one worker's clock runs ahead (ChaosStack skewSeconds).
 * Through the client whose absence grace is SHORT_GRACE_MS, so the window is the call timeout plus that.
 */
export class InFlightRetry extends Step {
  constructor(readonly commitAfter: number) {
    super();
  }
  override check(m: Readonly<Model>) {
    return m.effects.length < m.limits.effects && mayUse(m, 'in-flight-retry');
  }
  async run(m: Model, r: Real) {
    use(m, 'in-flight-retry');
    const { request } = newEffect(m, r, 'post', 'Launch post');
    bump(r, 'approvals');
    bump(r, 'retries approved while a post may be in flight');
    const windowMs = r.stack.options.callTimeoutMs + (r.stack.options.shortGraceMs ?? SHORT_GRACE_MS);
    await r.stack.simulator.fault('delay_before_commit', {
      path: '/social/v1/posts',
      delayMs: Math.round(windowMs * this.commitAfter),
    });
    await decideOnceAsked(r, r.stack.effectsShortGrace, request, 'approve-retry', 'nothing on the feed yet; retry');
  }
  toString() {
    return `in-flight-retry(commits at ${Math.round(this.commitAfter * 100)}% of the window)`;
  }
}

/**
 * An abandon sent while the provider still holds our request (seed 1201000004: accepted with the key in flight,
 * the refund landed 0.6 s later, and the ledger said abandoned beside it). The keyed API holds the effect's
 * request past our call timeout, its key reported in flight, and commits it `commitAfterMs` after it arrived;
 * the operator abandons as soon as a person is asked. The audit then sees any object the ledger gave up on.
 */
export class AbandonInFlight extends Step {
  constructor(
    readonly kind: 'refund' | 'task',
    readonly commitAfterMs: number,
  ) {
    super();
  }
  override check(m: Readonly<Model>) {
    return m.effects.length < m.limits.effects && mayUse(m, 'abandon-in-flight');
  }
  async run(m: Model, r: Real) {
    use(m, 'abandon-in-flight');
    const { effectId, request } = newEffect(m, r, this.kind, 'Held refund');
    bump(r, 'approvals');
    bump(r, 'abandons sent while the request is in flight');
    await r.stack.simulator.fault('delay_before_commit', {
      path: '/v1/objects',
      reference: effectId,
      delayMs: r.stack.options.callTimeoutMs + this.commitAfterMs,
    });
    await decideOnceAsked(r, r.stack.effects, request, 'abandon', 'the refund looks stuck; give up');
  }
  toString() {
    return `abandon-in-flight(${this.kind}, commits ${this.commitAfterMs} ms after the timeout)`;
  }
}

/**
 * Approves the request and, the moment the effect asks a person (UNKNOWN, awaiting a human), sends one operator's
 * decision through the `decide` update: what an operator who acts at once does.
 */
async function decideOnceAsked(
  r: Real,
  client: Pick<EffectLedgerClient, 'approve'>,
  request: Record<string, unknown>,
  kind: 'approve-retry' | 'abandon',
  reason: string,
): Promise<void> {
  const effectId = String(request.effectId);
  try {
    await client.approve(request);
  } catch (error) {
    r.notes.push(`approve ${effectId} failed: ${(error as Error).message}`);
    return;
  }
  const asks = await until(() => asksPerson(r, effectId), 20_000, 50);
  if (!asks) return;
  const seen = await lookAt(r, effectId);
  await sendDecision(r, effectId, kind, { actor: OPERATOR, reason }, { via: 'update', seen, decisionId: randomUUID() });
}
