// Two deliveries of the same approval at the same moment → one workflow run, one provider object.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Stack, startStack } from '../harness/local-stack.js';
import { refundRequest } from '../harness/sample-requests.js';
import { runCli } from './support/cli.js';

async function runsOf(stack: Stack, effectId: string): Promise<string[]> {
  const runs: string[] = [];
  for await (const execution of stack.env.client.workflow.list({ query: `WorkflowId = '${effectId}'` }))
    runs.push(execution.runId);
  return runs;
}

describe('concurrent approvals of one effect', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(() => stack?.stop());

  test('parallel promises in one process', async () => {
    const request = refundRequest('refund:parallel-1', 700);
    const results = await stack.withWorker(async () => {
      const approvals = await Promise.all(Array.from({ length: 8 }, () => stack.effects.approve(request)));
      await stack.effects.result(request.effectId);
      return approvals;
    });
    assert.equal(results.filter((r) => r.created).length, 1, 'exactly one approval registered the effect');
    assert.equal((await runsOf(stack, request.effectId)).length, 1);
    const objects = (await stack.simulator.objects()).filter((o) => o.metadata.effect_id === request.effectId);
    assert.equal(objects.length, 1);
    const { trail } = await stack.effects.status(request.effectId);
    assert.equal(trail.attempts.length, 1);
    assert.equal(trail.fact?.externalId, objects[0]!.id);
  });

  test('two separate processes', async () => {
    const request = JSON.stringify(refundRequest('refund:two-processes', 900));
    const [a, b] = await stack.withWorker(async () => {
      const runs = await Promise.all([
        runCli(stack, ['approve', '--json'], request),
        runCli(stack, ['approve', '--json'], request),
      ]);
      await stack.effects.result('refund:two-processes');
      return runs;
    });
    assert.equal(a!.code, 0, a!.stderr);
    assert.equal(b!.code, 0, b!.stderr);
    const created = [a!, b!].map((r) => (JSON.parse(r.stdout) as { created: boolean }).created);
    assert.deepEqual(created.sort(), [false, true]);
    assert.equal((await runsOf(stack, 'refund:two-processes')).length, 1);
    assert.equal(
      (await stack.simulator.objects()).filter((o) => o.metadata.effect_id === 'refund:two-processes').length,
      1,
    );
    assert.equal((await stack.effects.status('refund:two-processes')).trail.attempts.length, 1);
  });
});
