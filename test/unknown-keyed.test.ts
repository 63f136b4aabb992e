// UNKNOWN on the keyed (Stripe-style) destination, with real faults: the connection dropped after
// commit, a response held past the timeout, a failure before commit, a worker SIGKILLed mid-call or
// before the request left, a 409 and a 500 after commit, the cap on automatic retries, a terminated run,
// and a key the provider has already forgotten. Never two objects; the provider's own request log says
// how many requests arrived, with which key and body.
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { defaultPayloadConverter } from '@temporalio/common';
import postgres from 'postgres';
import {
  assertProviderSaw,
  liveStatus,
  objectsFor,
  resultOf,
  runEffect,
  waitForStage,
} from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { refundRequest } from '../harness/sample-requests.js';
import { startWorkerProcess } from '../harness/worker-process.js';
import { waitFor } from '../stack/wait-for.js';
import { EFFECT_WORKFLOW_TYPE, type EffectInput } from '../workflows/contract.js';
import { isolateEachTest, TEST_TIMEOUT } from './support/isolation.js';

/** Only for effects whose answer a test holds back; every other call gets the destination's own (seconds). */
const SHORT_CALL_TIMEOUT_MS = 2000;
/** Held answers wait until the test releases them (or the provider is reset after the test). */
const HOLD_MS = 600_000;

describe('UNKNOWN on a keyed destination', () => {
  let stack: Stack;
  let quick: Stack['effects'];
  before(async () => {
    stack = await startStack();
    quick = stack.effectsWith({ callTimeoutMs: SHORT_CALL_TIMEOUT_MS });
  });
  after(() => stack?.stop());
  isolateEachTest(() => stack);

  const posts = async () => (await stack.simulator.requests({ method: 'POST', path: '/v1/objects' })).length;

  test(
    '1. commit then drop the connection → unknown → readback finds it → recorded, one object, one request',
    TEST_TIMEOUT,
    async () => {
      await stack.simulator.fault('drop_after_commit', { path: '/v1/objects' });
      const result = await runEffect(stack, refundRequest('refund:dropped', 100));
      assert.equal(result.stage, 'recorded');
      const [post] = await assertProviderSaw(stack, 'refund:dropped', { posts: 1 });
      assert.deepEqual([post!.fault, post!.fate], ['drop_after_commit', 'dropped']);
      const objects = await objectsFor(stack, 'refund:dropped');
      assert.equal(objects.length, 1);
      assert.equal(post!.objectId, objects[0]!.id);
      const { trail } = await stack.effects.status('refund:dropped');
      assert.equal(trail.attempts.length, 1);
      assert.deepEqual(
        trail.evidence.map((e) => [e.kind, e.outcome]),
        [
          ['response', 'unknown'],
          ['readback', 'found'],
        ],
      );
      assert.equal(trail.fact?.externalId, objects[0]!.id);
      assert.equal(trail.fact?.confirmedBy, 'readback');
    },
  );

  test(
    'readback that fails on its way (provider reads answer 500) is retried until it answers; still one object',
    TEST_TIMEOUT,
    async () => {
      await stack.simulator.fault('drop_after_commit', { path: '/v1/objects' });
      await stack.simulator.fault('read_error_500', { path: '/v1/', count: 2 });
      const result = await runEffect(stack, refundRequest('refund:flaky-reads', 150));
      assert.equal(result.stage, 'recorded');
      await assertProviderSaw(stack, 'refund:flaky-reads', { posts: 1 });
      const failedReads = (await stack.simulator.requests({ method: 'GET' })).filter(
        (r) => r.fault === 'read_error_500',
      );
      assert.deepEqual(
        failedReads.map((r) => r.status),
        [500, 500],
      );
      assert.equal((await objectsFor(stack, 'refund:flaky-reads')).length, 1);
      const { trail } = await stack.effects.status('refund:flaky-reads');
      assert.equal(trail.attempts.length, 1);
      // Failed reads leave no evidence: only the readback that answered is recorded.
      assert.deepEqual(
        trail.evidence.map((e) => [e.kind, e.outcome]),
        [
          ['response', 'unknown'],
          ['readback', 'found'],
        ],
      );
      assert.deepEqual(await stack.simulator.faults(), [], 'both read faults were hit');
    },
  );

  test(
    '2. commit then hold the answer past the timeout → same; the late answer, once it goes out, changes nothing',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'refund:slow';
      await stack.simulator.fault('delay_after_commit', { path: '/v1/objects', delayMs: HOLD_MS });
      const result = await runEffect(stack, refundRequest(effectId, 200), quick);
      assert.equal(result.stage, 'recorded');
      const settled = await stack.effects.status(effectId);
      assert.equal(settled.trail.fact?.confirmedBy, 'readback');
      // Now the provider sends its held answer, to a socket our adapter abandoned at its timeout: no worker can
      // receive it (no worker runs here: an in-process worker started again at once sometimes never finishes its
      // shutdown on SDK 1.24, which would leave this file's later workers refused as duplicates).
      assert.equal(await stack.simulator.releaseDelays(), 1);
      await waitFor(
        async () => (await stack.simulator.requests({ method: 'POST' }))[0]?.fate === 'client_gone',
        'the late answer to go out',
      );
      const [post] = await assertProviderSaw(stack, effectId, { posts: 1 });
      assert.deepEqual([post!.status, post!.objectId], [200, settled.trail.fact?.externalId]);
      assert.equal((await objectsFor(stack, effectId)).length, 1);
      const { trail } = await stack.effects.status(effectId);
      assert.deepEqual(trail, settled.trail, 'the ledger is unchanged after the late answer');
      assert.equal(trail.attempts.length, 1);
      assert.equal(trail.effect.stage, 'recorded');
    },
  );

  test(
    '3. fail before commit → unknown → readback proves absence → same-key retry → recorded, one object',
    TEST_TIMEOUT,
    async () => {
      await stack.simulator.fault('fail_before_commit', { path: '/v1/objects' });
      const result = await runEffect(stack, refundRequest('refund:lost-request', 300));
      assert.equal(result.stage, 'recorded');
      const posts = await assertProviderSaw(stack, 'refund:lost-request', { posts: 2 });
      assert.deepEqual(
        posts.map((p) => [p.fault, p.fate, p.status]),
        [
          ['fail_before_commit', 'dropped', null],
          [null, 'answered', 200],
        ],
      );
      assert.equal((await objectsFor(stack, 'refund:lost-request')).length, 1);
      const { trail } = await stack.effects.status('refund:lost-request');
      assert.deepEqual(
        trail.attempts.map((a) => a.idempotencyKey),
        ['refund:lost-request', 'refund:lost-request'],
      );
      const evidence = trail.evidence.map((e) => [e.kind, e.outcome, e.coverage]);
      // Withheld while our request might still be processed, then absence proven, then a fresh readback
      // right before the retry: it still finds nothing, so the same key goes again.
      assert.deepEqual(evidence[0], ['response', 'unknown', null]);
      assert.deepEqual(evidence.slice(-3), [
        ['readback', 'absent', 'complete'],
        ['readback', 'absent', 'complete'],
        ['response', 'confirmed', null],
      ]);
      for (const [kind, outcome] of evidence.slice(1, -3))
        assert.deepEqual([kind, outcome], ['readback', 'inconclusive']);
      assert.equal(trail.fact?.confirmedBy, 'provider_response');
      assert.equal(trail.fact?.externalId, posts[1]!.objectId);
    },
  );

  test(
    '4. worker SIGKILLed while the call is in flight; a new worker takes over → no second POST; one object',
    TEST_TIMEOUT,
    async () => {
      await stack.simulator.fault('delay_after_commit', { path: '/v1/objects', delayMs: HOLD_MS });
      const doomed = await startWorkerProcess(stack);
      await quick.approve(refundRequest('refund:killed-mid-call', 400));
      await waitFor(async () => (await posts()) === 1, 'the POST to reach the provider');
      await doomed.kill();
      const result = await stack.withWorker(() => resultOf(stack, 'refund:killed-mid-call'));
      assert.equal(result.stage, 'recorded');
      await assertProviderSaw(stack, 'refund:killed-mid-call', { posts: 1 });
      assert.equal((await objectsFor(stack, 'refund:killed-mid-call')).length, 1);
      const { trail } = await stack.effects.status('refund:killed-mid-call');
      assert.equal(trail.attempts.length, 1);
      assert.equal(trail.fact?.confirmedBy, 'readback');
      // The send activity ran once and was never retried by Temporal: its timeout became UNKNOWN.
      const history = await stack.env.client.workflow.getHandle('refund:killed-mid-call').fetchHistory();
      const sends = (history.events ?? []).filter(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'attemptOnce',
      );
      assert.equal(sends.length, 1, 'one send activity scheduled');
      const sendStarts = (history.events ?? []).filter(
        (e) => String(e.activityTaskStartedEventAttributes?.scheduledEventId ?? '') === String(sends[0]?.eventId),
      );
      assert.deepEqual(
        sendStarts.map((e) => e.activityTaskStartedEventAttributes?.attempt),
        [1],
        'the send was not retried by Temporal',
      );
    },
  );

  test(
    '5. the provider answered, the worker was killed before the answer was written → no second POST; readback finds the object',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'refund:killed-after-answer';
      // Hold the ledger's evidence table: the worker gets the provider's answer but cannot record it.
      const locker = postgres(stack.databaseUrl, { max: 1, onnotice: () => {} });
      let unlock!: () => void;
      const unlocked = new Promise<void>((resolve) => (unlock = resolve));
      const lock = locker.begin(async (tx) => {
        await tx`LOCK TABLE provider_evidence IN ACCESS EXCLUSIVE MODE`;
        await unlocked;
      });
      const probe = postgres(stack.databaseUrl, { max: 1, onnotice: () => {} });
      try {
        await waitFor(
          async () =>
            (
              await probe`SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'provider_evidence' AND l.mode = 'AccessExclusiveLock' AND l.granted`
            ).length > 0,
          'the lock',
        );
        const doomed = await startWorkerProcess(stack);
        await stack.effects.approve(refundRequest(effectId, 700));
        await waitFor(async () => (await objectsFor(stack, effectId)).length === 1, 'the object at the provider');
        await waitFor(
          async () =>
            (
              await probe`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ILIKE '%provider_evidence%'`
            ).length > 0,
          'the worker to block on recording the answer',
        );
        await doomed.kill();
      } finally {
        unlock();
        await lock;
        await Promise.all([locker.end(), probe.end()]);
      }
      const result = await stack.withWorker(() => resultOf(stack, effectId));
      assert.equal(result.stage, 'recorded');
      const [post] = await assertProviderSaw(stack, effectId, { posts: 1 });
      const objects = await objectsFor(stack, effectId);
      assert.equal(objects.length, 1);
      const { trail } = await stack.effects.status(effectId);
      assert.equal(trail.attempts.length, 1);
      // The answer died with the send activity (v3 records it there): the activity's timeout is UNKNOWN,
      // and readback, not a second request, finds the object.
      assert.equal(trail.fact?.externalId, objects[0]!.id);
      assert.equal(trail.fact?.externalId, post!.objectId);
      assert.equal(trail.fact?.confirmedBy, 'readback');
      assert.deepEqual(
        trail.evidence.map((e) => [e.kind, e.outcome]),
        [
          ['response', 'unknown'],
          ['readback', 'found'],
        ],
      );
    },
  );

  test(
    '6. intent recorded, worker killed before the request reached the provider → readback absent → same-key retry; one object',
    TEST_TIMEOUT,
    async () => {
      // The doomed worker's provider is a loopback port that accepts connections and never answers.
      const held: Socket[] = [];
      const blackhole: Server = createServer((socket) => held.push(socket));
      await new Promise<void>((resolve) => blackhole.listen(0, '127.0.0.1', resolve));
      const port = (blackhole.address() as { port: number }).port;
      try {
        const doomed = await startWorkerProcess(stack, `http://127.0.0.1:${port}`);
        await quick.approve(refundRequest('refund:killed-before-send', 500));
        await waitFor(async () => held.length > 0, 'the doomed worker to open its connection');
        await doomed.kill();
        const result = await stack.withWorker(() => resultOf(stack, 'refund:killed-before-send'));
        assert.equal(result.stage, 'recorded');
        const [post] = await assertProviderSaw(stack, 'refund:killed-before-send', { posts: 1 });
        assert.equal((await objectsFor(stack, 'refund:killed-before-send')).length, 1);
        const { trail } = await stack.effects.status('refund:killed-before-send');
        assert.deepEqual(
          trail.attempts.map((a) => [a.attemptNumber, a.idempotencyKey]),
          [
            [1, 'refund:killed-before-send'],
            [2, 'refund:killed-before-send'],
          ],
        );
        assert.ok(
          trail.evidence.some((e) => e.kind === 'readback' && e.outcome === 'absent' && e.coverage === 'complete'),
        );
        assert.ok(Date.parse(post!.at) >= trail.attempts[1]!.startedAt.getTime(), 'the one POST is attempt 2');
      } finally {
        for (const socket of held) socket.destroy();
        await new Promise((resolve) => blackhole.close(resolve));
      }
    },
  );

  test(
    '9. the provider forgot the key (retention 0) → readback by reference, no automatic second write',
    TEST_TIMEOUT,
    async () => {
      // Retention is restored after each test (isolation).
      await stack.simulator.setRetention(0);
      await stack.simulator.fault('drop_after_commit', { path: '/v1/objects' });
      const result = await runEffect(stack, refundRequest('refund:forgotten-key', 600));
      assert.equal(result.stage, 'recorded');
      await assertProviderSaw(stack, 'refund:forgotten-key', { posts: 1 });
      assert.equal((await objectsFor(stack, 'refund:forgotten-key')).length, 1);
      const { trail } = await stack.effects.status('refund:forgotten-key');
      const readback = trail.evidence.find((e) => e.kind === 'readback');
      assert.equal(readback?.outcome, 'found');
      assert.equal((readback?.detail as { method?: string } | undefined)?.method, 'metadata_search');
    },
  );

  test(
    '500 after commit → unknown → readback finds the committed object → recorded, one request',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'refund:500-after-commit';
      await stack.simulator.fault('status_500_after_commit', { path: '/v1/objects' });
      const result = await runEffect(stack, refundRequest(effectId, 650));
      assert.equal(result.stage, 'recorded');
      const [post] = await assertProviderSaw(stack, effectId, { posts: 1 });
      assert.deepEqual([post!.fault, post!.status], ['status_500_after_commit', 500]);
      const { trail } = await stack.effects.status(effectId);
      assert.deepEqual(
        trail.evidence.map((e) => [e.kind, e.outcome, e.httpStatus]),
        [
          ['response', 'unknown', 500],
          ['readback', 'found', null],
        ],
      );
      assert.equal(trail.fact?.confirmedBy, 'readback');
      assert.equal(trail.fact?.externalId, post!.objectId);
    },
  );

  test(
    '409 end to end: attempt 1 held in flight → readback inconclusive → a human approves a retry → 409 "key in use" → still unknown; after the first commits, the fresh readback before the next approved retry finds it: no third request',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'refund:in-flight';
      await stack.simulator.fault('delay_before_commit', { path: '/v1/objects', delayMs: HOLD_MS });
      await stack.withWorker(async () => {
        await quick.approve(refundRequest(effectId, 700));
        const frozen = await waitForStage(stack, effectId, 'unknown', 'a human decision');
        assert.equal(frozen.readbacks.at(-1)?.outcome, 'inconclusive');
        const retry = { actor: 'ops@example.com', reason: 'looked stuck' };
        assert.deepEqual(await quick.decide(effectId, 'approve-retry', retry), { accepted: true, stage: 'unknown' });
        await waitFor(async () => {
          const s = await liveStatus(stack, effectId);
          return s.attempts.length === 2 && s.stage === 'unknown' && s.awaiting?.includes('a human decision');
        }, 'attempt 2 (409) to leave the effect unknown, awaiting a human');
        assert.equal(await stack.simulator.releaseDelays(), 1, 'the first request commits now');
        // Our side gave up at the call's deadline (client_gone). Once on the cluster its connection was still open
        // here and the reply went out (answered): the deadline had been lost to a GC (test/send-deadline.test.ts).
        await waitFor(
          async () => (await stack.simulator.requests({ method: 'POST' }))[0]?.fate === 'client_gone',
          'the first request to commit',
        );
        assert.equal((await quick.decide(effectId, 'approve-retry', retry)).accepted, true);
        assert.equal((await resultOf(stack, effectId)).stage, 'recorded');
      });
      const posts = await assertProviderSaw(stack, effectId, { posts: 2 });
      const committed = posts[0]!.objectId;
      assert.ok(committed);
      assert.deepEqual(
        posts.map((p) => [p.status, p.errorCode, p.replayed, p.objectId]),
        [
          [200, null, false, committed],
          [409, 'idempotency_key_in_use', false, null],
        ],
      );
      assert.equal((await objectsFor(stack, effectId)).length, 1);
      const { trail } = await stack.effects.status(effectId);
      assert.deepEqual(
        trail.evidence.filter((e) => e.kind === 'response').map((e) => [e.outcome, e.httpStatus]),
        [
          ['unknown', null],
          ['unknown', 409],
        ],
      );
      assert.equal(trail.fact?.externalId, committed);
      assert.equal(trail.fact?.confirmedBy, 'readback');
    },
  );

  test(
    'an abandon while the provider still processes our request waits for it: the object that lands is recorded, never abandoned beside it',
    TEST_TIMEOUT,
    async () => {
      // Found by chaos seed 1201000004: an abandon was accepted while the key was in flight, and the object
      // landed 0.6 s later, so the ledger said abandoned while the provider had made the refund.
      const effectId = 'refund:abandon-in-flight';
      await stack.simulator.fault('delay_before_commit', { path: '/v1/objects', delayMs: HOLD_MS });
      const { answer, trail } = await stack.withWorker(async () => {
        await quick.approve(refundRequest(effectId, 710));
        const frozen = await waitForStage(stack, effectId, 'unknown', 'a human decision');
        assert.match(frozen.readbacks.at(-1)?.reason ?? '', /still being processed/);
        let answered = false;
        const abandon = quick
          .decide(effectId, 'abandon', { actor: 'ops@example.com', reason: 'looks stuck' })
          .finally(() => (answered = true));
        await waitFor(
          async () => answered || (await liveStatus(stack, effectId)).awaiting?.includes('abandon by ops@example.com'),
          'the abandon to be answered, or to wait for the request in flight',
        );
        assert.equal(await stack.simulator.releaseDelays(), 1, 'the held request commits now');
        const answer = await abandon;
        const result = await resultOf(stack, effectId);
        return { answer, result, trail: (await stack.effects.status(effectId)).trail };
      });
      const [object, ...others] = await objectsFor(stack, effectId);
      assert.ok(object, 'the held request made its refund');
      assert.equal(others.length, 0);
      assert.equal(answer.accepted, false, `the abandon is not applied beside an object: ${JSON.stringify(answer)}`);
      assert.match(answer.reason ?? '', /turned up/);
      assert.equal(trail.effect.stage, 'recorded');
      assert.equal(trail.fact?.externalId, object.id);
      assert.equal(trail.fact?.confirmedBy, 'readback');
      assert.deepEqual(
        trail.decisions.map((d) => [d.kind, d.accepted]),
        [['abandon', false]],
      );
      await assertProviderSaw(stack, effectId, { posts: 1 });
    },
  );

  test(
    'the cap on automatic retries: after three same-key retries on proven absence, a person decides',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'refund:keeps-failing';
      await stack.simulator.fault('fail_before_commit', { path: '/v1/objects', count: 4 });
      await stack.withWorker(async () => {
        // The short call timeout keeps each in-flight window (call timeout + grace) short.
        await quick.approve(refundRequest(effectId, 750));
        const frozen = await waitForStage(stack, effectId, 'unknown', 'a human decision');
        assert.equal(frozen.attempts.length, 4, 'the first attempt and three automatic retries');
        assert.equal(frozen.readbacks.at(-1)?.outcome, 'absent');
        await assertProviderSaw(stack, effectId, { posts: 4 });
        const answer = await stack.effects.decide(effectId, 'approve-retry', {
          actor: 'ops@example.com',
          reason: 'provider fixed',
        });
        assert.equal(answer.accepted, true);
        assert.equal((await resultOf(stack, effectId)).stage, 'recorded');
      });
      const posts = await assertProviderSaw(stack, effectId, { posts: 5 });
      assert.deepEqual(
        posts.map((p) => p.fate),
        ['dropped', 'dropped', 'dropped', 'dropped', 'answered'],
      );
      const { trail } = await stack.effects.status(effectId);
      assert.equal(trail.attempts.length, 5);
      assert.deepEqual(
        trail.decisions.map((d) => [d.kind, d.accepted]),
        [['approve-retry', true]],
      );
    },
  );

  test(
    'a terminated run: a new run of the effect starts in unknown and reads back first; no second request',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'refund:terminated';
      await stack.simulator.fault('delay_after_commit', { path: '/v1/objects', delayMs: HOLD_MS });
      await stack.withWorker(async () => {
        await quick.approve(refundRequest(effectId, 800));
        await waitFor(async () => (await posts()) === 1, 'the POST to reach the provider');
        const old = stack.env.client.workflow.getHandle(effectId);
        const { runId: oldRunId } = await old.describe();
        await old.terminate('operator ended the run mid-call');
        // An operator starts the effect again with the same input (Temporal keeps the first run's input).
        let input: EffectInput | undefined;
        for (const event of (await old.fetchHistory()).events ?? []) {
          const payload = event.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
          if (payload) input = defaultPayloadConverter.fromPayload<EffectInput>(payload);
        }
        assert.ok(input);
        const fresh = await stack.env.client.workflow.start(EFFECT_WORKFLOW_TYPE, {
          workflowId: effectId,
          taskQueue: stack.taskQueue,
          args: [input],
          workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        });
        assert.notEqual(fresh.firstExecutionRunId, oldRunId);
        assert.equal((await resultOf(stack, effectId)).stage, 'recorded');
        const history = await stack.env.client.workflow.getHandle(effectId, fresh.firstExecutionRunId).fetchHistory();
        const activities = (history.events ?? [])
          .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)
          .filter((name): name is string => Boolean(name));
        // Its send activity writes nothing and sends nothing: the ledger already holds attempt 1.
        assert.deepEqual(activities.slice(0, 2), ['attemptOnce', 'watchForObject'], 'the new run looks first');
        assert.ok(!activities.includes('sendToDestination'), 'the new run sent nothing');
        assert.ok(!activities.includes('recordAttempt'));
      });
      const [post] = await assertProviderSaw(stack, effectId, { posts: 1 });
      const { trail } = await stack.effects.status(effectId);
      assert.equal(trail.attempts.length, 1);
      assert.equal(trail.fact?.confirmedBy, 'readback');
      assert.equal(trail.fact?.externalId, post!.objectId);
    },
  );

  test(
    'a look-alike carrying our effect ID with another body is never absence: inconclusive, a person decides; after their approved retry our own object is recorded',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'refund:look-alike';
      // Someone else's object carrying our effect ID, with another amount (no key: not our request).
      const impostor = (await (
        await fetch(`${stack.simulator.url}/v1/objects`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            kind: 'refund.create',
            charge: 'ch_1001',
            amount: 9999,
            currency: 'EUR',
            metadata: { effect_id: effectId },
          }),
        })
      ).json()) as { id: string };
      const impostorSeq = (await stack.simulator.requests({ method: 'POST' }))[0]!.seq;
      await stack.simulator.fault('fail_before_commit', { path: '/v1/objects' });
      const result = await stack.withWorker(async () => {
        await quick.approve(refundRequest(effectId, 900));
        const frozen = await waitForStage(stack, effectId, 'unknown', 'a human decision');
        assert.match(frozen.readbacks.at(-1)?.reason ?? '', /carries our effect ID but another body/);
        assert.equal(frozen.attempts.length, 1, 'no automatic retry');
        await quick.decide(effectId, 'approve-retry', { actor: 'ops@example.com', reason: 'that one is not ours' });
        return resultOf(stack, effectId);
      });
      assert.equal(result.stage, 'recorded');
      const posts = await assertProviderSaw(stack, effectId, { posts: 2, ignore: [impostorSeq] });
      const { trail } = await stack.effects.status(effectId);
      assert.notEqual(trail.fact?.externalId, impostor.id, 'the look-alike is not our object');
      assert.equal(trail.fact?.externalId, posts[1]!.objectId);
      assert.equal(trail.fact?.confirmedBy, 'provider_response');
      const readbacks = trail.evidence.filter((e) => e.kind === 'readback');
      assert.ok(readbacks.length >= 2, 'read back before the decision, and again before the retry');
      assert.ok(readbacks.every((e) => e.outcome === 'inconclusive'));
    },
  );
});
