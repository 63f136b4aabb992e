// UNKNOWN on the keyed (Stripe-style) destination, with real faults: the connection dropped after
// commit, a response held past the timeout, a failure before commit, a worker SIGKILLed mid-call or
// before the request left, and a key the provider has already forgotten. Never two objects.
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import postgres from 'postgres';
import { objectsFor, runEffect } from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { refundRequest } from '../harness/sample-requests.js';
import { waitFor } from '../harness/wait-for.js';
import { startWorkerProcess } from '../harness/worker-process.js';

const CALL_TIMEOUT_MS = 1500;

describe('UNKNOWN on a keyed destination', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ callTimeoutMs: CALL_TIMEOUT_MS });
  });
  after(() => stack?.stop());

  const posts = async () => (await stack.simulator.stats()).posts['/v1/objects'] ?? 0;

  test('1. commit then drop the connection → unknown → readback finds it → recorded, one object', async () => {
    await stack.simulator.fault('drop_after_commit', { path: '/v1/objects' });
    const result = await runEffect(stack, refundRequest('refund:dropped', 100));
    assert.equal(result.stage, 'recorded');
    const objects = await objectsFor(stack, 'refund:dropped');
    assert.equal(objects.length, 1);
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
  });

  test('readback that fails on its way (provider reads answer 500) is retried until it answers; still one object', async () => {
    await stack.simulator.fault('drop_after_commit', { path: '/v1/objects' });
    await stack.simulator.fault('read_error_500', { path: '/v1/', count: 2 });
    const result = await runEffect(stack, refundRequest('refund:flaky-reads', 150));
    assert.equal(result.stage, 'recorded');
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
    const faultsLeft = (await (await fetch(`${stack.simulator.url}/_control/faults`)).json()) as { faults: unknown[] };
    assert.equal(faultsLeft.faults.length, 0, 'both read faults were hit');
  });

  test('2. commit then delay past the timeout → same; the late answer changes nothing', async () => {
    const before = await posts();
    await stack.simulator.fault('delay_after_commit', { path: '/v1/objects', delayMs: CALL_TIMEOUT_MS * 3 });
    const result = await runEffect(stack, refundRequest('refund:slow', 200));
    assert.equal(result.stage, 'recorded');
    // The held answer goes to a socket our adapter already abandoned: nothing of ours reads it, so the
    // ledger and the provider below are final whenever it lands.
    assert.equal(await posts(), before + 1, 'exactly one POST');
    assert.equal((await objectsFor(stack, 'refund:slow')).length, 1);
    const { trail } = await stack.effects.status('refund:slow');
    assert.equal(trail.attempts.length, 1);
    assert.equal(trail.fact?.confirmedBy, 'readback');
    assert.equal(trail.effect.stage, 'recorded');
  });

  test('3. fail before commit → unknown → readback proves absence → same-key retry → recorded, one object', async () => {
    await stack.simulator.fault('fail_before_commit', { path: '/v1/objects' });
    const result = await runEffect(stack, refundRequest('refund:lost-request', 300));
    assert.equal(result.stage, 'recorded');
    assert.equal((await objectsFor(stack, 'refund:lost-request')).length, 1);
    const { trail } = await stack.effects.status('refund:lost-request');
    assert.deepEqual(
      trail.attempts.map((a) => a.idempotencyKey),
      ['refund:lost-request', 'refund:lost-request'],
    );
    assert.deepEqual(
      trail.evidence.map((e) => [e.kind, e.outcome, e.coverage]),
      [
        ['response', 'unknown', null],
        ['readback', 'absent', 'complete'],
        ['response', 'confirmed', null],
      ],
    );
    assert.equal(trail.fact?.confirmedBy, 'provider_response');
  });

  test('4. worker SIGKILLed while the call is in flight; a new worker takes over → no second POST; one object', async () => {
    const before = await posts();
    await stack.simulator.fault('delay_after_commit', { path: '/v1/objects', delayMs: 60_000 });
    const doomed = await startWorkerProcess(stack);
    await stack.effects.approve(refundRequest('refund:killed-mid-call', 400));
    await waitFor(async () => (await posts()) === before + 1, 'the POST to reach the provider');
    await doomed.kill();
    const result = await stack.withWorker(() => stack.effects.result('refund:killed-mid-call'));
    assert.equal(result.stage, 'recorded');
    assert.equal(await posts(), before + 1, 'no second POST');
    assert.equal((await objectsFor(stack, 'refund:killed-mid-call')).length, 1);
    const { trail } = await stack.effects.status('refund:killed-mid-call');
    assert.equal(trail.attempts.length, 1);
    assert.equal(trail.fact?.confirmedBy, 'readback');
  });

  test('5. the provider answered, the worker was killed before the fact was written → no second POST; the fact is recovered', async () => {
    const effectId = 'refund:killed-after-answer';
    const before = await posts();
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
    const result = await stack.withWorker(() => stack.effects.result(effectId));
    assert.equal(result.stage, 'recorded');
    assert.equal(await posts(), before + 1, 'no second POST');
    const objects = await objectsFor(stack, effectId);
    assert.equal(objects.length, 1);
    const { trail } = await stack.effects.status(effectId);
    assert.equal(trail.attempts.length, 1);
    // The answer survived in the workflow's history; the retried ledger write records it.
    assert.equal(trail.fact?.externalId, objects[0]!.id);
  });

  test('6. intent recorded, worker killed before the request reached the provider → readback absent → same-key retry; one object', async () => {
    // The doomed worker's provider is a loopback port that accepts connections and never answers.
    const held: Socket[] = [];
    const blackhole: Server = createServer((socket) => held.push(socket));
    await new Promise<void>((resolve) => blackhole.listen(0, '127.0.0.1', resolve));
    const port = (blackhole.address() as { port: number }).port;
    try {
      const before = await posts();
      const doomed = await startWorkerProcess(stack, `http://127.0.0.1:${port}`);
      await stack.effects.approve(refundRequest('refund:killed-before-send', 500));
      await waitFor(async () => held.length > 0, 'the doomed worker to open its connection');
      await doomed.kill();
      const result = await stack.withWorker(() => stack.effects.result('refund:killed-before-send'));
      assert.equal(result.stage, 'recorded');
      assert.equal(await posts(), before + 1, 'the provider saw exactly one POST');
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
    } finally {
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => blackhole.close(resolve));
    }
  });

  test('9. the provider forgot the key (retention 0) → readback by reference, no automatic second write', async () => {
    const before = await posts();
    await fetch(`${stack.simulator.url}/_control/retention`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ keyRetentionMs: 0 }),
    });
    try {
      await stack.simulator.fault('drop_after_commit', { path: '/v1/objects' });
      const result = await runEffect(stack, refundRequest('refund:forgotten-key', 600));
      assert.equal(result.stage, 'recorded');
      assert.equal(await posts(), before + 1, 'no second POST');
      assert.equal((await objectsFor(stack, 'refund:forgotten-key')).length, 1);
      const { trail } = await stack.effects.status('refund:forgotten-key');
      const readback = trail.evidence.find((e) => e.kind === 'readback');
      assert.equal(readback?.outcome, 'found');
      assert.equal((readback?.detail as { method?: string } | undefined)?.method, 'metadata_search');
    } finally {
      await fetch(`${stack.simulator.url}/_control/retention`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ keyRetentionMs: 86_400_000 }),
      });
    }
  });
});
