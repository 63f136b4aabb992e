// Approved effect → recorded fact, and duplicate-proofing, on a real dev server, PostgreSQL and HTTP.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Worker } from '@temporalio/worker';
import { runEffect } from '../harness/effect-probes.js';
import { effectIdOf, eventTypes, readHistoryFile } from '../harness/histories/history-file.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { refundRequest, taskRequest } from '../harness/sample-requests.js';
import { EffectConflictError } from '../ledger/errors.js';
import { bundleEffectWorkflows } from '../workers/effect-worker.js';
import { runScript } from './support/cli.js';

describe('approving effects', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(() => stack?.stop());

  test('seed acceptance: request-17, request-17 again, request-18 → two objects, two facts', async () => {
    const deliveries = [
      taskRequest('task:request-17', 'request-17'),
      taskRequest('task:request-17', 'request-17'),
      taskRequest('task:request-18', 'request-18'),
    ];
    await stack.withWorker(async () => {
      for (const delivery of deliveries) {
        await stack.effects.approve(delivery);
        await stack.effects.result(delivery.effectId);
      }
    });
    const objects = (await stack.simulator.objects()).filter((o) => o.request.title === 'Prepare preview');
    assert.equal(objects.length, 2);
    assert.deepEqual(objects.map((o) => o.metadata.effect_id).sort(), ['task:request-17', 'task:request-18']);
    for (const id of ['task:request-17', 'task:request-18']) {
      const { trail } = await stack.effects.status(id);
      assert.equal(trail.effect.stage, 'recorded');
      assert.equal(trail.attempts.length, 1, `${id} attempts`);
      assert.equal(trail.attempts[0]!.idempotencyKey, id);
      assert.ok(trail.fact, `${id} has a fact`);
      assert.equal(trail.fact.confirmedBy, 'provider_response');
      assert.ok(objects.some((o) => o.id === trail.fact!.externalId));
    }
  });

  test('the same effect ID with a changed amount is a conflict: no provider call, ledger unchanged', async () => {
    await runEffect(stack, refundRequest('refund:A-1', 4000));
    const postsBefore = (await stack.simulator.stats()).posts['/v1/objects'];
    const before = await stack.effects.status('refund:A-1');
    await assert.rejects(stack.effects.approve(refundRequest('refund:A-1', 4500)), (error) => {
      assert.ok(error instanceof EffectConflictError);
      assert.equal(error.effectId, 'refund:A-1');
      return true;
    });
    assert.equal((await stack.simulator.stats()).posts['/v1/objects'], postsBefore);
    assert.deepEqual((await stack.effects.status('refund:A-1')).trail, before.trail);
  });

  test('a definitive 4xx from the provider → rejected, no retry, evidence kept', async () => {
    const result = await runEffect(stack, refundRequest('refund:bad-amount', -5));
    assert.equal(result.stage, 'rejected');
    const { trail } = await stack.effects.status('refund:bad-amount');
    assert.equal(trail.effect.stage, 'rejected');
    assert.equal(trail.attempts.length, 1);
    assert.equal(trail.evidence.length, 1);
    assert.equal(trail.evidence[0]!.outcome, 'rejected');
    assert.equal(trail.evidence[0]!.httpStatus, 400);
    assert.equal(trail.fact, null);
    const objects = await stack.simulator.objects();
    assert.equal(objects.filter((o) => o.metadata.effect_id === 'refund:bad-amount').length, 0);
  });

  test('re-approving a recorded effect returns its fact and calls no provider', async () => {
    const first = await runEffect(stack, refundRequest('refund:A-2', 1200));
    assert.equal(first.stage, 'recorded');
    const postsBefore = (await stack.simulator.stats()).posts['/v1/objects'];
    const again = await stack.effects.approve(refundRequest('refund:A-2', 1200));
    assert.equal(again.created, false);
    assert.equal(again.stage, 'recorded');
    assert.equal(again.fact?.externalId, first.externalId);
    assert.equal((await stack.simulator.stats()).posts['/v1/objects'], postsBefore);
    assert.equal((await stack.effects.status('refund:A-2')).trail.attempts.length, 1);
  });

  test('a long display summary is shortened to one line, not refused; it is not part of the fingerprint', async () => {
    const request = { ...taskRequest('task:long-title', 'request-99', 'T'.repeat(200)), summary: undefined };
    const result = await runEffect(stack, request);
    assert.equal(result.stage, 'recorded');
    const { trail } = await stack.effects.status('task:long-title');
    assert.ok(trail.effect.summary.length <= 200, `summary has ${trail.effect.summary.length} chars`);
    assert.ok(trail.effect.summary.endsWith('…'));
    const again = await stack.effects.approve({ ...request, summary: 'another display text' });
    assert.equal(again.created, false);
  });

  test('503 with Retry-After (not processed) → retried after the delay with the same key → recorded, one object', async () => {
    await stack.simulator.fault('status_503_before_commit', { path: '/v1/objects' });
    const result = await runEffect(stack, refundRequest('refund:busy', 800));
    assert.equal(result.stage, 'recorded');
    const { trail } = await stack.effects.status('refund:busy');
    assert.deepEqual(
      trail.attempts.map((a) => a.idempotencyKey),
      ['refund:busy', 'refund:busy'],
    );
    assert.deepEqual(
      trail.evidence.map((e) => [e.outcome, e.httpStatus]),
      [
        ['not_sent', 503],
        ['confirmed', 200],
      ],
    );
    assert.equal((await stack.simulator.objects()).filter((o) => o.metadata.effect_id === 'refund:busy').length, 1);
  });

  test("an effect's history exported by effect ID from the server (as for a production history) replays against the workflow", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'exported-'));
    try {
      const out = join(dir, 'v1.prod-task-request-17.json');
      const server = ['--address', stack.env.address, '--namespace', stack.namespace];
      const run = await runScript(stack, 'capture-history.ts', ['task:request-17', ...server, '--out', out]);
      assert.equal(run.code, 0, run.stderr);
      const history = readHistoryFile(out);
      assert.equal(effectIdOf(history), 'task:request-17');
      assert.equal(eventTypes(history).at(-1), 'WORKFLOW_EXECUTION_COMPLETED');
      await Worker.runReplayHistory({ workflowBundle: await bundleEffectWorkflows() }, history, 'task:request-17');

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
  });
});
