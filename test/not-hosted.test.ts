// An effect for a destination the client knows but no polling worker hosts: its run never fails for it. The
// attempt is not written (nothing left), the wait says why in the Web UI's details, the status query and `effect
// status`, a person may abandon it meanwhile, and once a worker that hosts the destination polls, it proceeds. A
// readback waits on its destination's own queue (v5), which only a worker hosting the destination polls.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import proto from '@temporalio/proto';
import { httpAdapter } from '../activities/destinations/http-destination.js';
import { keyedApiSpec } from '../activities/destinations/keyed-api.js';
import { assertProviderSaw, liveStatus, objectsFor, resultOf, waitForStage } from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { taskRequest } from '../harness/sample-requests.js';
import { readTrail } from '../ledger/trail.js';
import { waitFor } from '../stack/wait-for.js';
import { effectStageKey } from '../workflows/search-attributes.js';
import { runCli } from './support/cli.js';
import { isolateEachTest, TEST_TIMEOUT } from './support/isolation.js';

/** A worker that hosts no destination at all: it runs the workflows and the ledger activities only. */
const HOSTS_NOTHING = { adapters: () => ({}) };
const WAITING = 'a worker that hosts destination keyed-api';

describe('a destination no polling worker hosts', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ purpose: 'not_hosted' });
  });
  after(() => stack?.stop());
  isolateEachTest(() => stack);

  test(
    'the approval waits visibly with nothing written, then proceeds on a worker that hosts it',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'task:not-hosted-1';
      const nowhere = await stack.startWorker(HOSTS_NOTHING);
      try {
        await stack.effects.approve(taskRequest(effectId, 'req-nh-1'));
        const waiting = await waitForStage(stack, effectId, 'attempted', WAITING);
        assert.match(waiting.awaiting ?? '', /nothing was sent/);
        assert.match(waiting.awaiting ?? '', /not hosted by this worker \(it hosts: none\)/);
        assert.deepEqual(waiting.attempts, [], 'no attempt in the workflow’s view');
        // The run is alive, and says so where an operator looks: its search attribute and its current details.
        const handle = stack.env.client.workflow.getHandle(effectId);
        const description = await handle.describe();
        assert.equal(description.status.name, 'RUNNING');
        assert.equal(description.typedSearchAttributes.get(effectStageKey), 'attempted');
        // The ledger holds no attempt: nothing was written for a request that could not leave.
        const trail = await readTrail(stack.ledger.db, effectId);
        assert.equal(trail?.effect.stage, 'released');
        assert.equal(trail?.attempts.length, 0);
        const cli = await runCli(stack, ['status', effectId]);
        assert.equal(cli.code, 0, cli.stderr);
        assert.match(cli.stdout, new RegExp(`awaiting: ${WAITING}`));
        assert.equal((await objectsFor(stack, effectId)).length, 0);
      } finally {
        await nowhere.stop();
      }
      const result = await stack.withWorker(() => resultOf(stack, effectId));
      assert.equal(result.stage, 'recorded');
      const trail = await readTrail(stack.ledger.db, effectId);
      assert.equal(trail?.attempts.length, 1, 'one attempt: the one a hosting worker made');
      assert.equal(trail?.attempts[0]?.attemptNumber, 1);
      const objects = await objectsFor(stack, effectId);
      assert.equal(objects.length, 1);
      assert.equal(trail?.fact?.externalId, objects[0]?.id);
      await assertProviderSaw(stack, effectId, { posts: 1 });
    },
  );

  test('a person abandons it meanwhile: nothing was ever sent', TEST_TIMEOUT, async () => {
    const effectId = 'task:not-hosted-2';
    await stack.withWorker(async () => {
      await stack.effects.approve(taskRequest(effectId, 'req-nh-2'));
      await waitForStage(stack, effectId, 'attempted', WAITING);
      const answer = await stack.effects.decide(effectId, 'abandon', {
        actor: 'ops@example.com',
        reason: 'no worker will ever host keyed-api here',
      });
      assert.equal(answer.accepted, true, answer.reason);
      const result = await resultOf(stack, effectId);
      assert.equal(result.stage, 'abandoned');
    }, HOSTS_NOTHING);
    const trail = await readTrail(stack.ledger.db, effectId);
    assert.equal(trail?.effect.stage, 'abandoned');
    assert.equal(trail?.attempts.length, 0);
    assert.equal((await objectsFor(stack, effectId)).length, 0);
    await assertProviderSaw(stack, effectId, { posts: 0 });
  });

  test(
    "a readback waits on its destination's queue, which a worker that does not host the destination never polls",
    TEST_TIMEOUT,
    async () => {
      const effectId = 'task:not-hosted-3';
      // The send times out while the provider still holds the key in flight: UNKNOWN, and the first readback
      // (on the hosting worker) is inconclusive. The next one comes a readback interval later.
      const effects = stack.effectsWith({ callTimeoutMs: 1000, readbackIntervalMs: 8000 });
      await stack.simulator.fault('delay_before_commit', { path: '/v1/objects', delayMs: 2500 });
      await stack.withWorker(async () => {
        await effects.approve(taskRequest(effectId, 'req-nh-3'));
        await waitFor(async () => (await liveStatus(stack, effectId)).readbacks.length === 1, 'the first readback');
      });
      const nowhere = await stack.startWorker(HOSTS_NOTHING);
      try {
        // The next look is scheduled on keyed-api's readback queue; only a worker hosting keyed-api polls it, so it
        // stays scheduled — never started, never retried — meanwhile.
        const handle = stack.env.client.workflow.getHandle(effectId);
        const pending = await waitFor(async () => {
          const { raw } = await handle.describe();
          return raw.pendingActivities?.find((a) => a.activityType?.name === 'watchForObject');
        }, 'the next look scheduled');
        await new Promise((resolve) => setTimeout(resolve, 3000)); // a non-hosting worker's poll would take it by now
        const { raw } = await handle.describe();
        const still = raw.pendingActivities?.find((a) => a.activityId === pending.activityId);
        assert.equal(still?.attempt, pending.attempt, 'not taken, so not retried');
        assert.notEqual(
          still?.state,
          proto.temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED,
          'no worker that lacks keyed-api took it',
        );
        const report = await stack.effects.status(effectId);
        assert.equal(report.trail.effect.stage, 'unknown', 'still UNKNOWN, not failed');
        const readbacks = report.trail.evidence.filter((e) => e.kind === 'readback');
        assert.equal(readbacks.length, 1, 'the worker that does not host it recorded no readback');
      } finally {
        await nowhere.stop();
      }
      const result = await stack.withWorker(() => resultOf(stack, effectId));
      assert.equal(result.stage, 'recorded');
      const trail = await readTrail(stack.ledger.db, effectId);
      assert.equal(trail?.attempts.length, 1);
      assert.equal(trail?.fact?.confirmedBy, 'readback');
      assert.equal((await objectsFor(stack, effectId)).length, 1);
    },
  );

  test(
    'a worker whose declaration no longer dedupes as the effect was approved (idempotencyKey dropped) sends nothing: contract-changed, visibly, no attempt written',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'task:contract-changed-1';
      const { idempotencyKey: _, plans: __, ...keyless } = keyedApiSpec;
      const dropped = {
        adapters: () => ({
          'keyed-api': httpAdapter(
            { ...keyless, readback: [keyedApiSpec.readback[1]!] },
            { baseUrl: stack.simulator.url },
          ),
        }),
      };
      const changed = await stack.startWorker(dropped);
      try {
        await stack.effects.approve(taskRequest(effectId, 'req-cc-1'));
        const waiting = await waitForStage(stack, effectId, 'attempted', WAITING);
        assert.match(waiting.awaiting ?? '', /contract-changed: the effect was approved to dedupe by idempotency_key/);
        const trail = await readTrail(stack.ledger.db, effectId);
        assert.equal(trail?.attempts.length, 0, 'nothing written under another protection');
        assert.equal((await objectsFor(stack, effectId)).length, 0);
      } finally {
        await changed.stop();
      }
      const result = await stack.withWorker(() => resultOf(stack, effectId));
      assert.equal(result.stage, 'recorded');
      assert.equal((await objectsFor(stack, effectId)).length, 1);
    },
  );

  test(
    'a worker that cannot build the released request (its operation dropped from the module) waits visibly: unsendable, one attempt row, not one a minute',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'task:unsendable-1';
      const { 'task.create': _, ...others } = keyedApiSpec.operations;
      const narrowed = {
        adapters: () => ({
          'keyed-api': httpAdapter(
            { ...keyedApiSpec, plans: {}, operations: others },
            { baseUrl: stack.simulator.url },
          ),
        }),
      };
      const worker = await stack.startWorker(narrowed);
      try {
        await stack.effects.approve(taskRequest(effectId, 'req-us-1'));
        const waiting = await waitForStage(stack, effectId, 'attempted', WAITING);
        assert.match(waiting.awaiting ?? '', /unsendable: keyed-api declares no request for task\.create/);
        // Its waits back off 1 s, 2 s, 4 s, …: before, each wrote an attempt and its answer.
        await new Promise((resolve) => setTimeout(resolve, 8000));
        const trail = await readTrail(stack.ledger.db, effectId);
        assert.ok((trail?.attempts.length ?? 0) <= 1, `attempts written while it waits: ${trail?.attempts.length}`);
        assert.equal((await objectsFor(stack, effectId)).length, 0);
      } finally {
        await worker.stop();
      }
      const result = await stack.withWorker(() => resultOf(stack, effectId));
      assert.equal(result.stage, 'recorded');
      assert.equal((await objectsFor(stack, effectId)).length, 1);
    },
  );

  test(
    'a retry is not sent by a worker whose declaration puts the key in another header: contract-changed, visibly, no attempt written meanwhile',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'task:key-header-changed-1';
      // Every request is answered 429 (not processed): attempt after attempt, each with the key in Idempotency-Key.
      await stack.simulator.fault('status_429_before_commit', { path: '/v1/objects', count: 1000 });
      const first = await stack.startWorker();
      try {
        await stack.effects.approve(taskRequest(effectId, 'req-kh-1'));
        await waitForStage(stack, effectId, 'attempted', 'not sent');
      } finally {
        await first.stop();
      }
      const renamed = {
        adapters: () => ({
          'keyed-api': httpAdapter(
            { ...keyedApiSpec, idempotencyKey: { ...keyedApiSpec.idempotencyKey!, header: 'X-Idempotency-Key' } },
            { baseUrl: stack.simulator.url },
          ),
        }),
      };
      const changed = await stack.startWorker(renamed);
      let before = 0;
      try {
        const waiting = await waitForStage(stack, effectId, 'attempted', WAITING);
        assert.match(waiting.awaiting ?? '', /contract-changed: attempt \d+ went with keyHeader Idempotency-Key/);
        before = (await readTrail(stack.ledger.db, effectId))?.attempts.length ?? 0;
        await new Promise((resolve) => setTimeout(resolve, 5000));
        assert.equal(
          (await readTrail(stack.ledger.db, effectId))?.attempts.length,
          before,
          'no attempt while it waits',
        );
      } finally {
        await changed.stop();
      }
      await stack.simulator.clearFaults();
      const result = await stack.withWorker(() => resultOf(stack, effectId));
      assert.equal(result.stage, 'recorded');
      assert.equal((await objectsFor(stack, effectId)).length, 1);
      const { trail } = await stack.effects.status(effectId);
      assert.equal(trail.attempts.length, before + 1, 'the matching worker made the next attempt');
    },
  );
});
