// Two deliveries of the same approval at the same moment → one workflow run, one provider request.
// Contenders in separate processes are let go together by a barrier, once both are connected and ready.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertProviderSaw, latestRunId, objectsFor, resultOf } from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { refundRequest } from '../harness/sample-requests.js';
import { BARRIER_ENV, startBarrier } from '../stack/barrier.js';
import { waitFor } from '../stack/wait-for.js';
import { type CliRun, runCli } from './support/cli.js';
import { isolateEachTest, TEST_TIMEOUT } from './support/isolation.js';

async function runsOf(stack: Stack, effectId: string): Promise<string[]> {
  const runs: string[] = [];
  for await (const execution of stack.env.client.workflow.list({ query: `WorkflowId = '${effectId}'` }))
    runs.push(execution.runId);
  return runs;
}

/** Runs `approve --json` in two processes that start approving at the same moment. */
async function raceCli(stack: Stack, requests: [string, string]): Promise<[CliRun, CliRun]> {
  const barrier = await startBarrier(2);
  try {
    const env = { [BARRIER_ENV]: barrier.address };
    const runs = await Promise.all(requests.map((r) => runCli(stack, ['approve', '--json'], r, env)));
    assert.equal(barrier.arrived(), 2, 'both contenders reached the barrier');
    return runs as [CliRun, CliRun];
  } finally {
    await barrier.close();
  }
}

describe('concurrent approvals of one effect', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(() => stack?.stop());
  isolateEachTest(() => stack);

  test('parallel promises in one process', TEST_TIMEOUT, async () => {
    const request = refundRequest('refund:parallel-1', 700);
    const results = await stack.withWorker(async () => {
      const approvals = await Promise.all(Array.from({ length: 8 }, () => stack.effects.approve(request)));
      await resultOf(stack, request.effectId);
      return approvals;
    });
    assert.equal(results.filter((r) => r.created).length, 1, 'exactly one approval registered the effect');
    assert.equal((await runsOf(stack, request.effectId)).length, 1);
    const [post] = await assertProviderSaw(stack, request.effectId, { posts: 1 });
    const objects = await objectsFor(stack, request.effectId);
    assert.equal(objects.length, 1);
    const { trail } = await stack.effects.status(request.effectId);
    assert.equal(trail.attempts.length, 1);
    assert.equal(trail.fact?.externalId, post!.objectId);
  });

  test('two separate processes, started together', TEST_TIMEOUT, async () => {
    const request = JSON.stringify(refundRequest('refund:two-processes', 900));
    const [a, b] = await stack.withWorker(async () => {
      const runs = await raceCli(stack, [request, request]);
      await resultOf(stack, 'refund:two-processes');
      return runs;
    });
    assert.equal(a.code, 0, a.stderr);
    assert.equal(b.code, 0, b.stderr);
    const created = [a, b].map((r) => (JSON.parse(r.stdout) as { created: boolean }).created);
    assert.deepEqual(created.sort(), [false, true]);
    assert.equal((await runsOf(stack, 'refund:two-processes')).length, 1);
    await assertProviderSaw(stack, 'refund:two-processes', { posts: 1 });
    assert.equal((await objectsFor(stack, 'refund:two-processes')).length, 1);
    assert.equal((await stack.effects.status('refund:two-processes')).trail.attempts.length, 1);
  });

  test(
    'conflicting fingerprints racing each other: one wins, the other is a conflict; only the winner is sent',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'refund:contested';
      const [a, b] = await stack.withWorker(async () => {
        const runs = await raceCli(stack, [
          JSON.stringify(refundRequest(effectId, 1000)),
          JSON.stringify(refundRequest(effectId, 1001)),
        ]);
        await resultOf(stack, effectId);
        return runs;
      });
      assert.deepEqual([a.code, b.code].sort(), [0, 3], `exit codes: ${a.code} ${a.stderr} / ${b.code} ${b.stderr}`);
      const loser = a.code === 3 ? a : b;
      assert.match(loser.stderr, /EffectConflictError/);
      const winnerAmount = a.code === 0 ? 1000 : 1001;
      assert.equal((await runsOf(stack, effectId)).length, 1);
      const { trail } = await stack.effects.status(effectId);
      assert.equal((trail.effect.payload as { amount: number }).amount, winnerAmount);
      const [post] = await assertProviderSaw(stack, effectId, { posts: 1 });
      assert.equal(post!.bodySha256, trail.releases[0]!.bodySha256);
      const objects = await objectsFor(stack, effectId);
      assert.deepEqual(
        objects.map((o) => o.request.amount),
        [winnerAmount],
      );
    },
  );

  test(
    'a duplicate arriving while the first run is still open joins it: no new run, one request',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'refund:open-duplicate';
      const request = refundRequest(effectId, 1100);
      // Hold the provider's answer until the duplicate has been handled.
      await stack.simulator.fault('delay_after_commit', { path: '/v1/objects', delayMs: 600_000 });
      // A generous call timeout for this effect: its answer is held until the duplicate has been handled.
      const patient = stack.effectsWith({ callTimeoutMs: 120_000 });
      const { first, second, runBefore } = await stack.withWorker(async () => {
        const first = await patient.approve(request);
        await waitFor(async () => (await stack.simulator.requests({ method: 'POST' })).length === 1, 'the POST');
        const runBefore = await latestRunId(stack, effectId);
        const second = await stack.effects.approve(request);
        assert.equal(await latestRunId(stack, effectId), runBefore, 'the duplicate joined the open run');
        assert.equal((await stack.env.client.workflow.getHandle(effectId).describe()).status.name, 'RUNNING');
        assert.equal(await stack.simulator.releaseDelays(), 1);
        assert.equal((await resultOf(stack, effectId)).stage, 'recorded');
        return { first, second, runBefore };
      });
      assert.equal(first.created, true);
      assert.equal(second.created, false);
      assert.equal(await latestRunId(stack, effectId), runBefore);
      assert.equal((await runsOf(stack, effectId)).length, 1);
      const [post] = await assertProviderSaw(stack, effectId, { posts: 1 });
      const { trail } = await stack.effects.status(effectId);
      assert.equal(trail.attempts.length, 1);
      assert.equal(trail.fact?.confirmedBy, 'provider_response');
      assert.equal(trail.fact?.externalId, post!.objectId);
    },
  );
});
