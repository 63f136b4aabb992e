// A deploy's SIGTERM is not a crash: the worker stops polling, lets the send it is running finish, records
// the provider's answer, and exits cleanly. Nothing becomes UNKNOWN and no activity is reported as failed.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertProviderSaw, providerPostsFor, resultOf } from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { taskRequest } from '../harness/sample-requests.js';
import { startWorkerProcess } from '../harness/worker-process.js';
import { waitFor } from '../stack/wait-for.js';

const ANSWER_HELD_MS = 3000;

describe('worker shutdown on SIGTERM', { timeout: 180_000 }, () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ callTimeoutMs: 15_000, purpose: 'shutdown' });
  });
  after(() => stack?.stop());

  test('a send in flight is given its time: answered, recorded from the response, nothing failed', async () => {
    const effectId = 'task:deploy';
    // The provider stores the object at once and holds its answer: the call is in flight for 3 s.
    await stack.simulator.fault('delay_after_commit', { path: '/v1/objects', delayMs: ANSWER_HELD_MS });
    const worker = await startWorkerProcess(stack);
    const exited = new Promise<number | null>((resolve) => worker.child.once('exit', (code) => resolve(code)));
    await stack.effects.approve(taskRequest(effectId, 'request-deploy'));
    await waitFor(async () => (await providerPostsFor(stack, effectId)).length === 1, 'the POST at the provider');
    const termAt = Date.now();
    worker.child.kill('SIGTERM');
    assert.equal(await exited, 0, 'the worker exits cleanly');
    assert.ok(Date.now() - termAt >= ANSWER_HELD_MS / 2, 'it waited for the call in flight');

    // The activity recorded the provider's answer before the worker went: a response, not unknown.
    const [evidence] = await stack.ledger.sql<{ kind: string; outcome: string }[]>`
      SELECT kind, outcome FROM provider_evidence WHERE effect_id = ${effectId} ORDER BY evidence_id`;
    assert.deepEqual(evidence, { kind: 'response', outcome: 'confirmed' });

    // The next worker (the deploy's new one) finishes the workflow from there.
    const result = await stack.withWorker(() => resultOf(stack, effectId));
    assert.equal(result.stage, 'recorded');
    await assertProviderSaw(stack, effectId, { posts: 1 });
    const { trail } = await stack.effects.status(effectId);
    assert.equal(trail.attempts.length, 1);
    assert.equal(trail.fact?.confirmedBy, 'provider_response');
    const history = await stack.env.client.workflow.getHandle(effectId).fetchHistory();
    const failed = (history.events ?? []).filter(
      (e) =>
        e.activityTaskFailedEventAttributes ||
        e.activityTaskTimedOutEventAttributes ||
        e.activityTaskCanceledEventAttributes,
    );
    assert.equal(failed.length, 0, 'no activity failed, timed out or was cancelled');
  });
});
