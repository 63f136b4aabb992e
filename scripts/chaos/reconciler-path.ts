// What stands in the ledger reconciler's path (issue 19, "the reconciler can go blind"): an effect whose
// workflow can never be started, older than the effects stranded behind it; and more unfinished effects than
// one pass reads, with a newly stranded one after them. Every unfinished effect must have a running workflow
// within a bounded time, or show why not (the checker: run.ts's stuck findings, unstartable.ts).

import { setTimeout as sleep } from 'node:timers/promises';
import { failureReason } from '../../client/reconciler-pass.js';
import { LEDGER_RECONCILER_WORKFLOW_TYPE } from '../../workflows/ledger-reconciler.js';
import {
  buildRequest,
  bump,
  DieAfterLedgerWrite,
  type Model,
  type ModelEffect,
  mayUse,
  newEffect,
  type Real,
  Step,
  use,
} from './commands.js';
import { liveView } from './operator.js';
import { until } from './operators.js';

/** A poison effect's ID: 110 characters, which the ledger takes (up to 128) and the chaos server refuses (past 100). */
const POISON_ID_LENGTH = 110;

/**
 * A poison effect: approved (its ledger row written), but no start of its workflow ever succeeds — its ID is
 * past the server's limit on IDs (ChaosStack maxIdLength; limits differ per server and per cluster setting).
 * Then effects stranded behind it: approvers killed between the ledger write and the start.
 */
export class PoisonEffect extends Step {
  constructor(readonly strandedBehind: number) {
    super();
  }
  override check(m: Readonly<Model>) {
    return m.effects.length < m.limits.effects && mayUse(m, 'poison');
  }
  async run(m: Model, r: Real) {
    use(m, 'poison');
    const limit = r.stack.options.maxIdLength;
    // The cluster's server takes no dynamic-config argument from the run: there, no limit to pass.
    if (!limit || limit >= POISON_ID_LENGTH || r.stack.cluster) {
      bump(r, 'poison effects skipped (no server limit to pass)');
      return;
    }
    const n = m.next++;
    const base = `${r.prefix}-${n}-poison-`;
    const effectId = base.padEnd(POISON_ID_LENGTH, 'x');
    const request = buildRequest(effectId, 'post', n, 'Launch post');
    m.effects.push({ effectId, kind: 'post', request, origin: 'poison' });
    bump(r, 'poison effects (no start can succeed)');
    try {
      await r.stack.effects.approve(request);
      r.notes.push(`poison effect ${effectId} started after all: the server took its summary`);
    } catch (error) {
      r.touch(effectId, `approved; its start failed: ${(error as Error).message.slice(0, 120)}`);
    }
    await passesAtOnce(r, effectId);
    for (let i = 0; i < this.strandedBehind; i++) {
      const die = new DieAfterLedgerWrite('task', 'at-start');
      if (m.effects.length >= m.limits.effects) break;
      await die.run(m, r);
    }
  }
  toString() {
    return `poison-effect(${this.strandedBehind} stranded behind it)`;
  }
}

/** Reconciler passes run at once, as every worker's timer and the schedule do; rounds of them. */
const PASSES_AT_ONCE = 4;
const PASS_ROUNDS = 2;
/** A pass over a handful of effects ends in seconds; past this, the run goes on and says so. */
const PASS_PATIENCE_MS = 90_000;

/**
 * Passes that meet the poison effect together (before any effect is stranded behind it, so the workers'
 * own passes still have those to resume): each records its failed start, and none may fail for it. They run
 * in the workers, as the schedule's do, so a worker's planted cut is what meets them (run here, today's code
 * would record the poison's failure for it and hide the cut). Caught: a start failure recorded by a plain
 * insert (the second pass fails). Not reached: the microsecond interleaving CI met on 2026-12-06 (a pass whose
 * statement began first updating the row another had just inserted; 64 passes here did not meet it);
 * test/ledger-invariants.test.ts pins that one with a transaction.
 */
async function passesAtOnce(r: Real, poisonId: string) {
  for (let round = 0; round < PASS_ROUNDS; round++) {
    const passes = await Promise.allSettled(
      Array.from({ length: PASSES_AT_ONCE }, async (_, i) => {
        const pass = await r.stack.client.workflow.start(LEDGER_RECONCILER_WORKFLOW_TYPE, {
          workflowId: `reconciler-pass-${r.prefix}-${round}-${i}`,
          taskQueue: r.stack.taskQueue,
          args: [0],
        });
        const ended = await Promise.race([
          pass.result().then(() => true),
          sleep(PASS_PATIENCE_MS, false, { ref: false }),
        ]);
        if (!ended) r.notes.push(`reconciler pass ${pass.workflowId} had not ended after ${PASS_PATIENCE_MS} ms`);
      }),
    );
    bump(r, 'reconciler passes run at once', PASSES_AT_ONCE);
    for (const pass of passes)
      if (pass.status === 'rejected')
        r.violations.push({
          kind: 'reconciler_pass_failed',
          effectId: poisonId,
          detail: `a pass run beside ${PASSES_AT_ONCE - 1} others failed: ${failureReason(pass.reason).slice(0, 300)}`,
        });
  }
}

/**
 * More unfinished effects than one reconciler pass reads, all older than a newly stranded one: key-less posts
 * whose send fails before anything is stored wait for a person (running, unfinished), then an approver dies
 * between its ledger write and the start. `count` is the reconciler's page plus one (ChaosStack
 * reconcilerPageSize, which the chaos run sets to 5).
 */
export class FillReconcilerPage extends Step {
  constructor(readonly count: number) {
    super();
  }
  override check(m: Readonly<Model>) {
    return this.count > 0 && mayUse(m, 'page-fill');
  }
  async run(m: Model, r: Real) {
    use(m, 'page-fill');
    bump(r, 'unfinished effects parked before a stranded one', this.count);
    await r.stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts', count: this.count });
    const parked: Promise<unknown>[] = [];
    for (let i = 0; i < this.count; i++) {
      const { effectId, request } = newEffect(m, r, 'post', 'Launch post');
      parked.push(
        // Short grace (a person is asked soon), but whole runs: a parked effect waits without handing over.
        r.stack.effectsShortGrace.approve(request).catch((error: Error) => {
          r.notes.push(`approve ${effectId} failed: ${error.message}`);
        }),
      );
      if (parked.length >= 50) await Promise.all(parked.splice(0));
    }
    await Promise.all(parked);
    // Its ID sorts after every parked one: the reconciler pages by effect ID, so it is on the last page.
    await new DieAfterLedgerWrite('task', 'at-start', 'zz-').run(m, r);
  }
  toString() {
    return `fill-reconciler-page(${this.count} unfinished, then one stranded)`;
  }
}

/**
 * A long run of "not sent" answers (429 before commit: nothing stored), long enough that the server suggests
 * a continue-as-new during the pause before a resend (ChaosStack suggestContinueAsNewAt). Nothing ever left:
 * the effect must not end up in UNKNOWN, reading back and waiting for a person (the checker's
 * unknown_without_send).
 */
export class NotSentStreak extends Step {
  constructor(
    /** Keyed only: a key-less 429 is unknown since issue 26, never "not sent". */
    readonly kind: 'task',
    readonly answers: number,
  ) {
    super();
  }
  override check(m: Readonly<Model>) {
    return m.effects.length < m.limits.effects && mayUse(m, 'not-sent-streak');
  }
  async run(m: Model, r: Real) {
    use(m, 'not-sent-streak');
    const { effectId, request } = newEffect(m, r, this.kind, 'Quarterly report', { shortRuns: true });
    bump(r, 'approvals');
    bump(r, 'not-sent streaks (429 until the server suggests continue-as-new)');
    const path = '/v1/objects';
    await r.stack.simulator.fault('status_429_before_commit', { path, count: this.answers });
    try {
      await r.stack.effectsShortRuns.approve(request);
    } catch (error) {
      r.notes.push(`approve ${effectId} failed: ${(error as Error).message}`);
    }
    r.touch(effectId, `${this.answers} answers of 429 (not applied) queued for it`);
  }
  toString() {
    return `not-sent-streak(${this.kind}, ${this.answers}× 429)`;
  }
}

/**
 * A run terminated while it pauses to resend after "not sent" (seed 4242): the provider answers 429 (nothing
 * stored) `answers` times; once the effect shows the pause, its run is terminated from the outside, and the
 * ledger reconciler starts the next. Nothing ever left, so that run must send again, not read back and wait
 * for a person (the checker's unknown_without_send).
 */
export class TerminatedInPause extends Step {
  constructor(
    /** Keyed only: a key-less 429 is unknown since issue 26, never "not sent". */
    readonly kind: 'task',
    readonly answers: number,
  ) {
    super();
  }
  override check(m: Readonly<Model>) {
    return m.effects.length < m.limits.effects && mayUse(m, 'terminated-in-pause');
  }
  async run(m: Model, r: Real) {
    use(m, 'terminated-in-pause');
    const n = m.next++;
    const effectId = `${r.prefix}-${n}`;
    const request = buildRequest(effectId, this.kind, n, 'Paused report');
    const effect: ModelEffect = { effectId, kind: this.kind, request, origin: 'approved' };
    m.effects.push(effect);
    bump(r, 'approvals');
    const path = '/v1/objects';
    await r.stack.simulator.fault('status_429_before_commit', { path, reference: effectId, count: this.answers });
    try {
      await r.stack.effects.approve(request);
    } catch (error) {
      r.notes.push(`approve ${effectId} failed: ${(error as Error).message}`);
      return;
    }
    const pausing = await until(
      async () => /not sent/.test((await liveView(r, effectId, 1000))?.awaiting ?? ''),
      20_000,
      50,
    );
    if (!pausing) return;
    try {
      await r.stack.client.workflow.getHandle(effectId).terminate('chaos: terminated while it paused to resend');
    } catch (error) {
      r.notes.push(`terminate ${effectId}: ${(error as Error).message}`);
      return;
    }
    effect.terminated = true;
    bump(r, 'runs terminated while pausing after "not sent"');
    r.touch(effectId, `run terminated while pausing after "not sent" (${this.answers}× 429 queued)`);
  }
  toString() {
    return `terminated-in-pause(${this.kind}, ${this.answers}× 429)`;
  }
}
