// The chaos run bites. (1) A small run against the real stack — about 40 effects over two fixed seeds, one
// worker SIGKILL each, provider faults, a dev-server restart, pg_terminate_backend, an approver killed after
// its ledger write, a run terminated from the outside, human decisions — reports no duplicate and nothing
// lost (effects the run itself left without a workflow are reported as stuck, with their story, until a
// reconciler resumes them). (2) The same checker, against deliberately broken workers
// (test/support/variant-worker.ts wraps the real adapters, or bundles the workflow with one line changed),
// reports violations for each break.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { postRequest } from '../harness/sample-requests.js';
import { newReal, type Real } from '../scripts/chaos/commands.js';
import {
  explainedStuck,
  type RunVerdict,
  runChaos,
  settle,
  summarize,
  verify,
  violationsOf,
} from '../scripts/chaos/run.js';
import { ChaosStack } from '../scripts/chaos/stack.js';
import { waitFor } from '../stack/wait-for.js';
import type { Variant } from './support/variant-worker.js';

/** Waits for a promise at most `ms` (a broken variant may never finish). */
const within = (promise: Promise<unknown>, ms: number) =>
  Promise.race([promise.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, ms).unref())]);

const log = (line: string) => process.stdout.write(`# ${line}\n`);
const SEEDS = [20261130, 4242];

function lostOf(v: RunVerdict): number {
  const explained = explainedStuck(v);
  return (
    v.audit.findings.filter((f) => f.kind === 'lost' && !(f.effectId && explained.has(f.effectId))).length +
    v.violations.filter((x) => x.kind === 'lost').length
  );
}

describe('chaos run', () => {
  test(`seeds ${SEEDS.join(', ')}: ~40 effects, one kill each → no duplicates, nothing lost, nothing stuck, no worker crash`, {
    timeout: 1_200_000,
  }, async () => {
    const outcomes = await runChaos({
      effects: 20,
      kills: 1,
      devRestarts: 1,
      dies: 1,
      terminations: 1,
      seeds: SEEDS.length,
      seedList: SEEDS,
      workers: 2,
      callTimeoutMs: 2000,
      settleMs: 120_000,
      reconcileMs: 30_000,
      shrinkMs: 0,
      log,
    });
    assert.equal(outcomes.length, SEEDS.length);
    for (const outcome of outcomes) {
      const verdict = outcome.verdict;
      assert.ok(verdict, `seed ${outcome.seed} produced no verdict: ${outcome.error}`);
      // Whatever left an effect without a workflow (an approver killed, a run terminated), the ledger
      // reconciler has resumed it by now.
      const stuck = verdict.audit.findings.filter((f) => f.kind === 'stuck');
      const story = summarize(verdict).join('\n');
      assert.equal(verdict.audit.counts.duplicate, 0, `seed ${outcome.seed}: duplicates\n${story}`);
      assert.equal(lostOf(verdict), 0, `seed ${outcome.seed}: lost effects\n${story}`);
      assert.equal(stuck.length, 0, `seed ${outcome.seed}: stuck, not resumed by the reconciler\n${story}`);
      // A worker that dies on its own turns every call it holds into UNKNOWN: no crash is acceptable.
      const crashes = verdict.violations.filter((x) => x.kind === 'worker_crash');
      assert.equal(crashes.length, 0, `seed ${outcome.seed}: a worker died on its own\n${story}`);
    }
  });
});

describe('the checker bites on broken variants', () => {
  let stack: ChaosStack;
  before(async () => {
    stack = new ChaosStack({
      workers: 1,
      callTimeoutMs: 1500,
      readbackIntervalMs: 2000,
      readbacksPerRun: 10,
      workerEntry: fileURLToPath(new URL('./support/variant-worker.ts', import.meta.url)),
      log,
    });
    await stack.start();
  });
  after(() => stack?.stop());

  async function withVariant(variant: Variant, scenario: (real: Real) => Promise<void>): Promise<RunVerdict> {
    stack.options.workerEnv = { CHAOS_VARIANT: variant };
    const prefix = `variant-${variant}`;
    await stack.reset(variant);
    const real = newReal(stack, prefix, log);
    await scenario(real);
    const settled = await settle(stack, prefix, { settleMs: 30_000, reconcileMs: 5_000, log });
    const verdict = await verify(stack, real, null, settled, 0);
    for (const line of summarize(verdict)) log(line);
    return verdict;
  }

  const task = (effectId: string, request: string) => ({
    effectId,
    destination: 'keyed-api',
    operation: 'task.create',
    payload: { title: 'Prepare preview', request },
    approvedBy: 'chaos@example.com',
    authorizationRef: 'CHAOS-VARIANT',
  });

  test('the key is the run ID: keys not derived from the effect ID', { timeout: 300_000 }, async () => {
    const verdict = await withVariant('key-from-run', async ({ stack, prefix }) => {
      for (const n of [1, 2, 3]) await stack.effects.approve(task(`${prefix}-${n}`, `request-${n}`));
    });
    assert.ok(verdict.audit.counts.foreign_key >= 3, summarize(verdict).join('\n'));
    assert.ok(violationsOf(verdict).length > 0);
  });

  test('the key carries the attempt: every request under a key not derived from the effect ID is reported', {
    timeout: 300_000,
  }, async () => {
    const verdict = await withVariant('key-from-attempt', async ({ stack, prefix }) => {
      // Held past the call timeout: the attempt is unknown and a retry follows under the variant's new key.
      // (v3's in-flight window and fresh readback find the first object before the retry leaves, so even this
      // broken key makes no second object here; the checker must still see the key.)
      await stack.simulator.fault('delay_before_commit', { path: '/v1/objects', delayMs: 4000 });
      await stack.effects.approve(task(`${prefix}-1`, 'request-1'));
      await within(stack.effects.result(`${prefix}-1`), 60_000);
    });
    assert.ok(verdict.audit.counts.foreign_key >= 1, summarize(verdict).join('\n'));
  });

  test('readback trusts a title: a look-alike is taken for ours', { timeout: 300_000 }, async () => {
    const verdict = await withVariant('title-readback', async ({ stack, prefix }) => {
      await stack.effects.approve(task(`${prefix}-17`, 'request-17'));
      await within(stack.effects.result(`${prefix}-17`), 60_000);
      // request-18, titled the same, never reaches the provider; its readback "finds" request-17's object.
      await stack.simulator.fault('fail_before_commit', { path: '/v1/objects' });
      await stack.effects.approve(task(`${prefix}-18`, 'request-18'));
      // (Not result(): its long poll would outlive the test when the variant never finishes.)
      await new Promise((resolve) => setTimeout(resolve, 15_000));
    });
    const failing = violationsOf(verdict);
    assert.ok(failing.length > 0, summarize(verdict).join('\n'));
    assert.ok(
      failing.some((f) => f.effectId === `variant-title-readback-18`),
      `request-18 is not among the findings:\n${summarize(verdict).join('\n')}`,
    );
  });

  test('a retry without a fresh readback: the post still in flight is sent twice', { timeout: 300_000 }, async () => {
    const verdict = await withVariant('no-fresh-readback', async ({ stack, prefix }) => {
      const effectId = `${prefix}-1`;
      // The provider holds our post past the call timeout (it will commit it): the attempt is unknown, and
      // readback cannot call it absent while it may still be in flight.
      await stack.simulator.fault('delay_before_commit', { path: '/social/v1/posts', delayMs: 60_000 });
      await stack.effects.approve(postRequest(effectId, 'Launch, once'));
      await waitFor(async () => {
        const { live } = await stack.effects.status(effectId);
        return live?.stage === 'unknown' && live.awaiting?.includes('may still be in flight');
      }, `${effectId} waiting out its in-flight window`);
      // An operator approves a retry at once, as the guide allows. The real workflow waits the window out
      // and reads back first (test/unknown-episodes.test.ts); this variant sends again at once.
      const answer = await stack.effects.decide(effectId, 'approve-retry', {
        actor: 'ops@example.com',
        reason: 'looks lost',
      });
      assert.equal(answer.accepted, true);
      await within(stack.effects.result(effectId), 60_000);
      assert.equal(await stack.simulator.releaseDelays(), 1, 'the provider commits our first post now');
    });
    assert.ok(verdict.audit.counts.duplicate >= 1, summarize(verdict).join('\n'));
    assert.ok(violationsOf(verdict).some((f) => f.effectId === 'variant-no-fresh-readback-1'));
  });
});
