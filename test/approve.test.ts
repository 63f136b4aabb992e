// Approved effect → recorded fact, and duplicate-proofing, on a real dev server, PostgreSQL and HTTP.
// Provider-side outcomes are asserted from the provider's own request log.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Worker } from '@temporalio/worker';
import {
  allProviderPosts,
  assertProviderSaw,
  latestRunId,
  objectsFor,
  resultOf,
  runEffect,
} from '../harness/effect-probes.js';
import { effectIdOf, eventTypes, readHistoryFile } from '../harness/histories/history-file.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { refundRequest, taskRequest } from '../harness/sample-requests.js';
import { EffectConflictError } from '../ledger/errors.js';
import { waitFor } from '../stack/wait-for.js';
import { bundleEffectWorkflows } from '../workers/effect-worker.js';
import { runScript } from './support/cli.js';
import { isolateEachTest, TEST_TIMEOUT } from './support/isolation.js';

describe('approving effects', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(() => stack?.stop());
  isolateEachTest(() => stack);

  /**
   * Runs another effect to its end on the same worker: by then a workflow wrongly started just before
   * it would have been picked up too, so "nothing was sent" is a claim that could have failed.
   */
  async function sentinel(name: string) {
    const request = taskRequest(`task:sentinel-${name}`, `sentinel-${name}`);
    await stack.effects.approve(request);
    assert.equal((await resultOf(stack, request.effectId)).stage, 'recorded');
    await assertProviderSaw(stack, request.effectId, { posts: 1 });
  }

  test('seed acceptance: request-17, request-17 again, request-18 → two objects, two facts', TEST_TIMEOUT, async () => {
    const deliveries = [
      taskRequest('task:request-17', 'request-17'),
      taskRequest('task:request-17', 'request-17'),
      taskRequest('task:request-18', 'request-18'),
    ];
    await stack.withWorker(async () => {
      for (const delivery of deliveries) {
        await stack.effects.approve(delivery);
        await resultOf(stack, delivery.effectId);
      }
    });
    const objects = await stack.simulator.objects();
    assert.equal(objects.length, 2);
    assert.deepEqual(objects.map((o) => o.metadata.effect_id).sort(), ['task:request-17', 'task:request-18']);
    assert.equal((await allProviderPosts(stack)).length, 2, 'the repeat reached the provider not at all');
    for (const id of ['task:request-17', 'task:request-18']) {
      const [post] = await assertProviderSaw(stack, id, { posts: 1 });
      const { trail } = await stack.effects.status(id);
      assert.equal(trail.effect.stage, 'recorded');
      assert.equal(trail.attempts.length, 1, `${id} attempts`);
      assert.equal(trail.attempts[0]!.idempotencyKey, id);
      assert.ok(trail.fact, `${id} has a fact`);
      assert.equal(trail.fact.confirmedBy, 'provider_response');
      assert.equal(post!.objectId, trail.fact.externalId, 'the fact names the object the provider answered with');
    }
  });

  test(
    'the same effect ID with a changed amount is a conflict: no provider call (worker polling), no new run, ledger unchanged',
    TEST_TIMEOUT,
    async () => {
      await runEffect(stack, refundRequest('refund:A-1', 4000));
      const before = await stack.effects.status('refund:A-1');
      const runBefore = await latestRunId(stack, 'refund:A-1');
      await stack.withWorker(async () => {
        await assert.rejects(stack.effects.approve(refundRequest('refund:A-1', 4500)), (error) => {
          assert.ok(error instanceof EffectConflictError);
          assert.equal(error.effectId, 'refund:A-1');
          return true;
        });
        await sentinel('conflict');
      });
      const [post] = await assertProviderSaw(stack, 'refund:A-1', { posts: 1 });
      assert.equal(post!.bodySha256, before.trail.releases[0]!.bodySha256, 'only the approved amount ever left');
      assert.equal(await latestRunId(stack, 'refund:A-1'), runBefore, 'no new workflow run');
      assert.deepEqual((await stack.effects.status('refund:A-1')).trail, before.trail);
    },
  );

  test('a definitive 4xx from the provider → rejected, no retry, evidence kept', TEST_TIMEOUT, async () => {
    const result = await runEffect(stack, refundRequest('refund:bad-amount', -5));
    assert.equal(result.stage, 'rejected');
    const [post] = await assertProviderSaw(stack, 'refund:bad-amount', { posts: 1 });
    assert.deepEqual([post!.status, post!.errorType], [400, 'invalid_request_error']);
    const { trail } = await stack.effects.status('refund:bad-amount');
    assert.equal(trail.effect.stage, 'rejected');
    assert.equal(trail.attempts.length, 1);
    assert.equal(trail.evidence.length, 1);
    assert.equal(trail.evidence[0]!.outcome, 'rejected');
    assert.equal(trail.evidence[0]!.httpStatus, 400);
    assert.equal(trail.fact, null);
    assert.equal((await objectsFor(stack, 'refund:bad-amount')).length, 0);
  });

  test(
    're-approving a recorded effect returns its fact and calls no provider (worker polling), no new run',
    TEST_TIMEOUT,
    async () => {
      const first = await runEffect(stack, refundRequest('refund:A-2', 1200));
      assert.equal(first.stage, 'recorded');
      const runBefore = await latestRunId(stack, 'refund:A-2');
      const again = await stack.withWorker(async () => {
        const answer = await stack.effects.approve(refundRequest('refund:A-2', 1200));
        await sentinel('re-approval');
        return answer;
      });
      assert.equal(again.created, false);
      assert.equal(again.stage, 'recorded');
      assert.equal(again.fact?.externalId, first.externalId);
      await assertProviderSaw(stack, 'refund:A-2', { posts: 1 });
      assert.equal(await latestRunId(stack, 'refund:A-2'), runBefore, 'no new workflow run');
      assert.equal((await stack.effects.status('refund:A-2')).trail.attempts.length, 1);
    },
  );

  test(
    'a long display summary is shortened to one line, not refused; it is not part of the fingerprint',
    TEST_TIMEOUT,
    async () => {
      const request = { ...taskRequest('task:long-title', 'request-99', 'T'.repeat(200)), summary: undefined };
      const result = await runEffect(stack, request);
      assert.equal(result.stage, 'recorded');
      const { trail } = await stack.effects.status('task:long-title');
      assert.ok(trail.effect.summary.length <= 200, `summary has ${trail.effect.summary.length} chars`);
      assert.ok(trail.effect.summary.endsWith('…'));
      const again = await stack.effects.approve({ ...request, summary: 'another display text' });
      assert.equal(again.created, false);
      await assertProviderSaw(stack, 'task:long-title', { posts: 1 });
    },
  );

  for (const [status, fault] of [
    [503, 'status_503_before_commit'],
    [429, 'status_429_before_commit'],
  ] as const) {
    test(
      `${status} with Retry-After (not processed) → retried after the delay with the same key → recorded, one object`,
      TEST_TIMEOUT,
      async () => {
        const effectId = `refund:busy-${status}`;
        await stack.simulator.fault(fault, { path: '/v1/objects' });
        const result = await runEffect(stack, refundRequest(effectId, 800));
        assert.equal(result.stage, 'recorded');
        const posts = await assertProviderSaw(stack, effectId, { posts: 2 });
        assert.deepEqual(
          posts.map((p) => [p.fault, p.status]),
          [
            [fault, status],
            [null, 200],
          ],
        );
        assert.ok(Date.parse(posts[1]!.at) - Date.parse(posts[0]!.settledAt!) >= 900, 'the retry waited Retry-After');
        const { trail } = await stack.effects.status(effectId);
        assert.deepEqual(
          trail.attempts.map((a) => a.idempotencyKey),
          [effectId, effectId],
        );
        assert.deepEqual(
          trail.evidence.map((e) => [e.outcome, e.httpStatus]),
          [
            ['not_sent', status],
            ['confirmed', 200],
          ],
        );
        assert.equal((await objectsFor(stack, effectId)).length, 1);
        assert.equal(trail.fact?.externalId, posts[1]!.objectId);
      },
    );
  }

  test(
    'connection refused (nothing listening) → not sent → retried with the same key once the provider answers → recorded, one POST',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'refund:refused';
      // A port nothing listens on; later a relay to the simulator opens there.
      const probe = createServer();
      await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
      const port = (probe.address() as { port: number }).port;
      await new Promise((resolve) => probe.close(resolve));
      const simulatorPort = Number(new URL(stack.simulator.url).port);
      const sockets = new Set<Socket>();
      const relay = createServer((client) => {
        const upstream = connect(simulatorPort, '127.0.0.1');
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.once('close', () => sockets.delete(s));
          s.on('error', () => {});
        }
        client.pipe(upstream).pipe(client);
      });
      try {
        const result = await stack.withWorker(
          async () => {
            await stack.effects.approve(refundRequest(effectId, 850));
            await waitFor(async () => {
              const { trail } = await stack.effects.status(effectId);
              return trail.evidence.some((e) => e.outcome === 'not_sent');
            }, 'the refused attempt to be recorded as not sent');
            await new Promise<void>((resolve) => relay.listen(port, '127.0.0.1', resolve));
            return resultOf(stack, effectId);
          },
          { providerUrl: `http://127.0.0.1:${port}` },
        );
        assert.equal(result.stage, 'recorded');
      } finally {
        for (const s of sockets) s.destroy();
        await new Promise((resolve) => relay.close(resolve));
      }
      await assertProviderSaw(stack, effectId, { posts: 1 });
      const { trail } = await stack.effects.status(effectId);
      assert.ok(trail.attempts.length >= 2);
      assert.ok(trail.attempts.every((a) => a.idempotencyKey === effectId));
      assert.equal(trail.evidence[0]!.outcome, 'not_sent');
      assert.equal((trail.evidence[0]!.detail as { errorCode?: string }).errorCode, 'ECONNREFUSED');
      assert.equal(trail.fact?.confirmedBy, 'provider_response');
    },
  );

  test(
    "an effect's history exported by effect ID from the server (as for a production history) replays against the workflow",
    TEST_TIMEOUT,
    async () => {
      await runEffect(stack, taskRequest('task:exported', 'request-exported'));
      const dir = mkdtempSync(join(tmpdir(), 'exported-'));
      try {
        const out = join(dir, 'v1.prod-task-exported.json');
        const server = ['--address', stack.env.address, '--namespace', stack.namespace];
        const run = await runScript(stack, 'capture-history.ts', ['task:exported', ...server, '--out', out]);
        assert.equal(run.code, 0, run.stderr);
        const history = readHistoryFile(out);
        assert.equal(effectIdOf(history), 'task:exported');
        assert.equal(eventTypes(history).at(-1), 'WORKFLOW_EXECUTION_COMPLETED');
        await Worker.runReplayHistory({ workflowBundle: await bundleEffectWorkflows() }, history, 'task:exported');

        const missing = await runScript(stack, 'capture-history.ts', [
          'task:never-approved',
          ...server,
          '--out',
          join(dir, 'none.json'),
        ]);
        assert.equal(missing.code, 4);
        assert.match(missing.stderr, /no workflow history for effect task:never-approved/);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
