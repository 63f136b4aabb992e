// Bad input gets a clear, typed error and changes nothing: no ledger row, no workflow, no provider call.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { count } from 'drizzle-orm';
import { MAX_PAYLOAD_BYTES } from '../client/effect-request.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { refundRequest, taskRequest } from '../harness/sample-requests.js';
import { InvalidEffectRequestError, type InvalidRequestCode } from '../ledger/errors.js';
import { effects } from '../ledger/schema.js';
import { runCli } from './support/cli.js';

const valid = taskRequest('task:bad-input-base', 'request-1');
const { effectId: _omit, ...withoutId } = valid;
const { approvedBy: _omitApprover, ...withoutApprover } = valid;

const cases: Array<[string, unknown, InvalidRequestCode]> = [
  ['missing effect ID', withoutId, 'malformed'],
  ['empty effect ID', { ...valid, effectId: '' }, 'malformed'],
  ['over-long effect ID', { ...valid, effectId: `e${'x'.repeat(128)}` }, 'malformed'],
  ['effect ID with spaces', { ...valid, effectId: 'task 17' }, 'malformed'],
  ['effect ID starting with a dash', { ...valid, effectId: '-task-17' }, 'malformed'],
  ['effect ID that is a number', { ...valid, effectId: 17 }, 'malformed'],
  ['unknown destination', { ...valid, destination: 'fax-machine' }, 'unknown_destination'],
  ['unknown operation', { ...valid, operation: 'task.delete' }, 'unknown_operation'],
  ['payload is an array', { ...valid, payload: [1, 2] }, 'malformed'],
  ['payload is a string', { ...valid, payload: 'refund please' }, 'malformed'],
  ['payload is null', { ...valid, payload: null }, 'malformed'],
  [
    'payload holds a non-JSON value',
    { ...valid, payload: { title: 'x', request: 'r', when: new Date(0) } },
    'invalid_payload',
  ],
  [
    'payload over the size limit',
    { ...valid, payload: { title: 'x', request: 'r', notes: 'n'.repeat(MAX_PAYLOAD_BYTES) } },
    'payload_too_large',
  ],
  ['payload missing a required field', { ...valid, payload: { title: 'Prepare preview' } }, 'invalid_payload'],
  ['payload with an unknown field', { ...valid, payload: { ...valid.payload, colour: 'red' } }, 'invalid_payload'],
  ['missing approver', withoutApprover, 'malformed'],
  ['blank approver', { ...valid, approvedBy: '   ' }, 'malformed'],
  ['unknown top-level field', { ...valid, priority: 'high' }, 'malformed'],
  ['not an object at all', 'approve task 17', 'malformed'],
];

describe('bad input', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack();
  });
  after(() => stack?.stop());

  for (const [name, request, code] of cases) {
    test(`${name} → InvalidEffectRequestError(${code}), nothing written`, async () => {
      await assert.rejects(stack.effects.approve(request), (error) => {
        assert.ok(error instanceof InvalidEffectRequestError, String(error));
        assert.equal(error.code, code, error.message);
        return true;
      });
      const [row] = await stack.ledger.db.select({ n: count() }).from(effects);
      assert.equal(row!.n, 0);
      assert.equal((await stack.simulator.stats()).posts['/v1/objects'] ?? 0, 0);
    });
  }

  test('the CLI answers with distinct exit codes and writes nothing on bad input', async () => {
    const notJson = await runCli(stack, ['approve', '--json'], '{"effectId": ');
    assert.equal(notJson.code, 2, notJson.stderr);
    assert.match(notJson.stderr, /not JSON/);
    const invalid = await runCli(stack, ['approve'], JSON.stringify({ ...valid, destination: 'fax-machine' }));
    assert.equal(invalid.code, 2);
    assert.match(invalid.stderr, /unknown destination "fax-machine"/);
    const badStage = await runCli(stack, ['list', '--stage', 'done']);
    assert.equal(badStage.code, 2);
    const missing = await runCli(stack, ['status', 'refund:never-approved']);
    assert.equal(missing.code, 4);
    const [row] = await stack.ledger.db.select({ n: count() }).from(effects);
    assert.equal(row!.n, 0);
  });

  test('the CLI reports a conflict with exit code 3 and lists by stage', async () => {
    const first = await stack.withWorker(async () => {
      const run = await runCli(stack, ['approve', '--json'], JSON.stringify(refundRequest('refund:cli-1', 300)));
      await stack.effects.result('refund:cli-1');
      return run;
    });
    assert.equal(first.code, 0, first.stderr);
    const conflict = await runCli(stack, ['approve'], JSON.stringify(refundRequest('refund:cli-1', 301)));
    assert.equal(conflict.code, 3);
    assert.match(conflict.stderr, /EffectConflictError/);
    const listed = await runCli(stack, ['list', '--stage', 'recorded', '--json']);
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(
      (JSON.parse(listed.stdout) as Array<{ effectId: string }>).map((e) => e.effectId),
      ['refund:cli-1'],
    );
    const status = await runCli(stack, ['status', 'refund:cli-1']);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /attempt 1 key=refund:cli-1 .* → confirmed \(HTTP 200\)/);
  });
});
