// `effect audit` against a real stack: clean after an effect is recorded; then each kind of drift planted at
// the provider or in Temporal is reported, and the command exits 6.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { runEffect } from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { postRequest, taskAnnouncedRequest, taskRequest } from '../harness/sample-requests.js';
import { runCli } from './support/cli.js';

interface Report {
  findings: Array<{ kind: string; effectId: string | null }>;
  skipped: string[];
  checked: { objects: number };
}

describe('effect audit', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ purpose: 'audit' });
  });
  after(() => stack?.stop());

  const auditCli = async (...args: string[]) => {
    const run = await runCli(stack, [
      'audit',
      '--json',
      '--grace',
      '0',
      '--provider-url',
      stack.simulator.url,
      ...args,
    ]);
    return { code: run.code, report: JSON.parse(run.stdout) as Report, stderr: run.stderr };
  };
  const post = (path: string, body: unknown, key?: string) =>
    fetch(`${stack.simulator.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
      body: JSON.stringify(body),
    });

  test("recorded effects, one of two steps: no findings, exit 0, the provider's request log checked too", async () => {
    await runEffect(stack, taskRequest('audit:task-1', 'request-1'));
    await runEffect(stack, postRequest('audit:post-1', 'hello'));
    // Its announcing post carries `audit:steps-1~announce`: the announce step's object, not an unknown effect.
    const steps = await runEffect(stack, taskAnnouncedRequest('audit:steps-1', 'request-3'));
    assert.equal(steps.stage, 'recorded');
    const { code, report, stderr } = await auditCli();
    assert.equal(code, 0, stderr);
    assert.deepEqual(report.findings, []);
    assert.equal(report.checked.objects, 4, 'a task, a post, and the two-step effect’s task and post');
    assert.ok(!report.skipped.some((s) => s.includes('request')), `skipped: ${report.skipped.join('; ')}`);
  });

  test('planted drift is reported, and the exit code is 6', async () => {
    // A second object for a recorded effect, under another key; a post for an effect the ledger never approved;
    // an approved effect with no workflow (started with no worker, then terminated).
    await post(
      '/v1/objects',
      { kind: 'task.create', title: 'Prepare preview', request: 'request-1', metadata: { effect_id: 'audit:task-1' } },
      'audit:task-1-again',
    );
    await post('/social/v1/posts', { channel: 'x', text: 'who?', metadata: { effect_id: 'audit:ghost' } });
    await stack.effects.approve(taskRequest('audit:task-2', 'request-2'));
    await stack.env.client.workflow.getHandle('audit:task-2').terminate('audit test');
    const { code, report } = await auditCli();
    assert.equal(code, 6);
    const kinds = report.findings.map((f) => `${f.kind} ${f.effectId}`).sort();
    // The planted second object shows at the provider (a duplicate under a foreign key) and in its request
    // log (a foreign key again, and a request no attempt row preceded).
    assert.deepEqual(kinds, [
      'duplicate audit:task-1',
      'foreign_key audit:task-1',
      'foreign_key audit:task-1',
      'object_without_effect audit:ghost',
      'request_before_attempt audit:task-1',
      'stuck audit:task-2',
    ]);
    const scoped = await auditCli('--destination', 'social-feed');
    assert.deepEqual(
      scoped.report.findings.map((f) => f.kind),
      ['object_without_effect'],
    );
  });
});
