// Attempts as local activities (workflow v8, the client's `localAttempts: true`): the happy path in one workflow
// task and 7 history events; a workflow worker that does not host the destination hands the attempt to one that
// does, as a regular activity; a worker killed while its local call is in flight leaves the attempt row, so the
// replayed task's attempt is refused by the ledger and a look settles the effect — never a second POST; a deploy's
// SIGTERM while the local call is in flight lets it finish: the worker records the answer, closes the effect, exits.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { assertProviderSaw, objectsFor, resultOf, waitForStage } from '../harness/effect-probes.js';
import { type HistoryJson, pathOf } from '../harness/histories/history-file.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { refundRequest, taskRequest } from '../harness/sample-requests.js';
import { startWorkerProcess } from '../harness/worker-process.js';
import { waitFor } from '../stack/wait-for.js';
import { isolateEachTest, TEST_TIMEOUT } from './support/isolation.js';

const LOCAL = 'marker core_local_activity';
const SEND = 'activity attemptOnce';
/** A worker that hosts no destination at all: it runs the workflows and the ledger activities only. */
const HOSTS_NOTHING = { adapters: () => ({}) };

describe('attempts as local activities', () => {
  let stack: Stack;
  let local: Stack['effects'];
  before(async () => {
    stack = await startStack({ purpose: 'local_attempts' });
    local = stack.effectsWith({ localAttempts: true });
  });
  after(() => stack?.stop());
  isolateEachTest(() => stack);

  const historyOf = async (effectId: string) => {
    const history = await stack.env.client.workflow.getHandle(effectId).fetchHistory();
    return { events: history.events?.length ?? 0, path: pathOf(JSON.parse(historyToJSON(history)) as HistoryJson) };
  };

  test(
    'the happy path: one workflow task, 7 history events, no activity task; one object, one attempt',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'task:local-1';
      const result = await stack.withWorker(async () => {
        await local.approve(taskRequest(effectId, 'req-local-1'));
        return resultOf(stack, effectId);
      });
      assert.equal(result.stage, 'recorded');
      const { events, path } = await historyOf(effectId);
      assert.equal(events, 7, path.join(' → '));
      assert.ok(path.includes(LOCAL), 'the attempt is a local activity');
      assert.ok(!path.includes(SEND), 'no activity task');
      const { trail } = await stack.effects.status(effectId);
      assert.equal(trail.attempts.length, 1);
      assert.equal(trail.fact?.confirmedBy, 'provider_response');
      await assertProviderSaw(stack, effectId, { posts: 1 });
    },
  );

  test(
    'a workflow worker that does not host the destination hands the attempt to one that does, as an activity',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'task:local-2';
      const nowhere = await stack.startWorker(HOSTS_NOTHING);
      try {
        await local.approve(taskRequest(effectId, 'req-local-2'));
        // Its local try was answered not-hosted, and so was the activity only this worker polls: it waits.
        await waitForStage(stack, effectId, 'attempted', 'a worker that hosts destination keyed-api');
        assert.equal((await objectsFor(stack, effectId)).length, 0);
      } finally {
        await nowhere.stop();
      }
      const result = await stack.withWorker(() => resultOf(stack, effectId));
      assert.equal(result.stage, 'recorded');
      const { path } = await historyOf(effectId);
      assert.ok(path.includes(LOCAL), 'tried locally first');
      assert.ok(path.includes(SEND), 'then as an activity, which a hosting worker made');
      const { trail } = await stack.effects.status(effectId);
      assert.deepEqual(
        trail.attempts.map((a) => a.attemptNumber),
        [1],
      );
      assert.equal((await objectsFor(stack, effectId)).length, 1);
      await assertProviderSaw(stack, effectId, { posts: 1 });
    },
  );

  test(
    'a deploy’s SIGTERM while the local call is in flight: the worker waits for the answer, records it, closes the effect and exits 0',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'task:local-deploy';
      // The provider stores the object at once and holds its answer: the local call is in flight for 3 s.
      await stack.simulator.fault('delay_after_commit', { path: '/v1/objects', delayMs: 3000 });
      const worker = await startWorkerProcess(stack);
      const exited = new Promise<number | null>((resolve) => worker.child.once('exit', (code) => resolve(code)));
      await stack
        .effectsWith({ localAttempts: true, callTimeoutMs: 15_000 })
        .approve(taskRequest(effectId, 'req-local-deploy'));
      await waitFor(
        async () => (await stack.simulator.requests({ method: 'POST', path: '/v1/objects' })).length === 1,
        'the POST to reach the provider',
      );
      worker.child.kill('SIGTERM');
      assert.equal(await exited, 0, 'the worker exits cleanly');
      // No other worker ran: the one that was told to stop closed the effect from the provider's answer.
      const result = await resultOf(stack, effectId);
      assert.equal(result.stage, 'recorded');
      const { events, path } = await historyOf(effectId);
      assert.equal(events, 7, path.join(' → '));
      const { trail } = await stack.effects.status(effectId);
      assert.equal(trail.attempts.length, 1);
      assert.equal(trail.fact?.confirmedBy, 'provider_response');
      await assertProviderSaw(stack, effectId, { posts: 1 });
    },
  );

  test(
    'a worker SIGKILLed while its local call is in flight: the replayed attempt is refused by the ledger, a look finds the object; no second POST',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'refund:local-killed';
      const quick = stack.effectsWith({ localAttempts: true, callTimeoutMs: 2000 });
      await stack.simulator.fault('delay_after_commit', { path: '/v1/objects', delayMs: 600_000 });
      const doomed = await startWorkerProcess(stack);
      await quick.approve(refundRequest(effectId, 400));
      await waitFor(
        async () => (await stack.simulator.requests({ method: 'POST', path: '/v1/objects' })).length === 1,
        'the POST to reach the provider',
      );
      await doomed.kill();
      const result = await stack.withWorker(() => resultOf(stack, effectId));
      assert.equal(result.stage, 'recorded');
      await assertProviderSaw(stack, effectId, { posts: 1 });
      assert.equal((await objectsFor(stack, effectId)).length, 1);
      const { trail } = await stack.effects.status(effectId);
      assert.equal(trail.attempts.length, 1);
      assert.equal(trail.fact?.confirmedBy, 'readback');
    },
  );
});
