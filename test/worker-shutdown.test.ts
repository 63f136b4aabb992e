// A deploy's SIGTERM is not a crash: the worker stops polling, lets the send it is running finish, records
// the provider's answer, and exits cleanly. Nothing becomes UNKNOWN and no activity is reported as failed.
// The connections its destinations keep open (a NATS client's) close with it, so the process does exit.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { jetstreamManager } from '@nats-io/jetstream';
import { subjectFor } from '../activities/destinations/nats-jetstream.js';
import { assertProviderSaw, providerPostsFor, resultOf } from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { startNats } from '../harness/nats.js';
import { taskRequest } from '../harness/sample-requests.js';
import { startWorkerProcess, type WorkerProcess } from '../harness/worker-process.js';
import { waitFor, within } from '../stack/wait-for.js';

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

  test('a worker hosting JetStream exits after SIGTERM: its NATS connection closes with it', async () => {
    const effectId = 'event:deploy';
    const nats = await startNats();
    const tag = randomBytes(4).toString('hex');
    const stream = `SHUTDOWN_${tag}`;
    const subjectPrefix = `shutdown_${tag}`;
    const jsm = await jetstreamManager(nats.connection);
    let worker: WorkerProcess | undefined;
    try {
      await jsm.streams.add({ name: stream, subjects: [`${subjectPrefix}.>`] });
      worker = await startWorkerProcess(stack, undefined, {
        env: {
          EFFECT_LEDGER_NATS_URL: nats.address,
          EFFECT_LEDGER_NATS_STREAM: stream,
          EFFECT_LEDGER_NATS_SUBJECT_PREFIX: subjectPrefix,
        },
      });
      const child = worker.child;
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      await stack.effects.approve({
        effectId,
        destination: 'nats-jetstream',
        operation: 'event.publish',
        payload: { type: 'invoice.sent', data: { invoice: 'INV-deploy' } },
        approvedBy: 'ana@example.com',
        authorizationRef: 'TICKET-DEPLOY',
      });
      // The publish left over the adapter's connection, which stays open for the next one.
      assert.equal((await stack.effects.result(effectId)).stage, 'recorded');
      const info = await jsm.streams.info(stream, { subjects_filter: subjectFor(subjectPrefix, effectId) });
      assert.equal(info.state.messages, 1, 'one message on the stream');
      child.kill('SIGTERM');
      // No activity is running: the worker stops at once, unless something keeps its event loop alive.
      const code = await within(exited, 'the worker to exit after SIGTERM', 20_000).catch(
        (error: Error) => error.message,
      );
      assert.equal(code, 0, 'the worker exits cleanly');
    } finally {
      await worker?.kill();
      await jsm.streams.delete(stream).catch(() => {});
      await nats.stop();
    }
  });
});
