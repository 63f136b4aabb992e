// Bad input gets a clear, typed error and changes nothing: no ledger row, no workflow, no provider call.
// A worker polls throughout, so a wrongly started workflow could reach the provider; after each refusal
// a sentinel effect runs to its end on that worker before "nothing was sent" is judged.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { count } from 'drizzle-orm';
import { MAX_PAYLOAD_BYTES, validateEffectRequest } from '../client/effect-request.js';
import { allProviderPosts, assertProviderSaw, latestRunId, resultOf } from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { refundRequest, taskRequest } from '../harness/sample-requests.js';
import { InvalidEffectRequestError, type InvalidRequestCode } from '../ledger/errors.js';
import { effects } from '../ledger/schema.js';
import { runCli } from './support/cli.js';
import { isolateEachTest, TEST_TIMEOUT } from './support/isolation.js';

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
  let worker: { stop(): Promise<void> } | undefined;
  before(async () => {
    stack = await startStack();
    worker = await stack.startWorker();
  });
  after(async () => {
    await worker?.stop();
    await stack?.stop();
  });
  isolateEachTest(() => stack);

  const effectRows = async () => (await stack.ledger.db.select({ n: count() }).from(effects))[0]!.n;
  let sentinels = 0;

  /** After a refusal: nothing in the ledger, no workflow under the ID, and (after a sentinel ran) no POST. */
  async function assertNothingHappened(rowsBefore: number, effectId: unknown) {
    assert.equal(await effectRows(), rowsBefore, 'no ledger row');
    if (typeof effectId === 'string' && effectId !== '') {
      assert.equal(await latestRunId(stack, effectId), null, `no workflow ${effectId}`);
    }
    const sentinel = taskRequest(`task:sentinel-${++sentinels}`, `sentinel-${sentinels}`);
    await stack.effects.approve(sentinel);
    assert.equal((await resultOf(stack, sentinel.effectId)).stage, 'recorded');
    await assertProviderSaw(stack, sentinel.effectId, { posts: 1 });
    assert.deepEqual(
      (await allProviderPosts(stack)).map((p) => [p.path, p.effectId]),
      [['/v1/objects', sentinel.effectId]],
      'the provider (keyed and social) saw nothing but the sentinel',
    );
  }

  for (const [name, request, code] of cases) {
    test(
      `${name} → InvalidEffectRequestError(${code}), nothing written, nothing started, nothing sent`,
      TEST_TIMEOUT,
      async () => {
        const rowsBefore = await effectRows();
        await assert.rejects(stack.effects.approve(request), (error) => {
          assert.ok(error instanceof InvalidEffectRequestError, String(error));
          assert.equal(error.code, code, error.message);
          return true;
        });
        await assertNothingHappened(rowsBefore, (request as { effectId?: unknown } | null)?.effectId);
      },
    );
  }

  test('the CLI answers with distinct exit codes and writes nothing on bad input', TEST_TIMEOUT, async () => {
    const rowsBefore = await effectRows();
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
    await assertNothingHappened(rowsBefore, valid.effectId);
  });

  test(
    'the CLI refuses a request it cannot read as UTF-8 text (missing file, directory, invalid bytes): exit 2, a typed error, nothing written',
    TEST_TIMEOUT,
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'bad-input-'));
      try {
        const rowsBefore = await effectRows();
        // A title written as Latin-1 (é as the one byte 0xe9): decoded leniently, U+FFFD, and the request valid.
        const request = taskRequest('task:latin-1', 'request-latin-1', 'Prepare café');
        const utf8 = Buffer.from(JSON.stringify(request));
        const at = utf8.indexOf(Buffer.from('é'));
        const latin1 = Buffer.concat([utf8.subarray(0, at), Buffer.from([0xe9]), utf8.subarray(at + 2)]);
        validateEffectRequest(JSON.parse(latin1.toString('utf8')));
        const latin1File = join(dir, 'latin-1.json');
        writeFileSync(latin1File, latin1);
        const [missing, directory, fromFile, fromStdin] = await Promise.all([
          runCli(stack, ['approve', join(dir, 'missing.json')]),
          runCli(stack, ['approve', dir]),
          runCli(stack, ['approve', latin1File]),
          runCli(stack, ['approve', '--json'], latin1),
        ]);
        for (const [run, says] of [
          [missing, /^RequestFileError: request file .*missing\.json: no such file$/m],
          [directory, /^RequestFileError: request file .*: is a directory, not a request file$/m],
          [fromFile, /^RequestFileError: request file .*latin-1\.json: is not UTF-8 text/m],
          [fromStdin, /^RequestFileError: standard input: is not UTF-8 text/m],
        ] as const) {
          assert.equal(run.code, 2, run.stderr);
          assert.match(run.stderr, says);
          assert.doesNotMatch(run.stderr, /ENOENT|EISDIR|at .*\(node:/, 'no raw system error or stack');
        }
        assert.equal((JSON.parse(fromStdin.stdout) as { error: string }).error, 'RequestFileError');
        await assertNothingHappened(rowsBefore, request.effectId);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  test(
    'the CLI reports a conflict with exit code 3 (nothing sent, no new run) and lists by stage',
    TEST_TIMEOUT,
    async () => {
      const first = await runCli(stack, ['approve', '--json'], JSON.stringify(refundRequest('refund:cli-1', 300)));
      assert.equal(first.code, 0, first.stderr);
      await resultOf(stack, 'refund:cli-1');
      const runBefore = await latestRunId(stack, 'refund:cli-1');
      const conflict = await runCli(stack, ['approve'], JSON.stringify(refundRequest('refund:cli-1', 301)));
      assert.equal(conflict.code, 3);
      assert.match(conflict.stderr, /EffectConflictError/);
      const sentinel = taskRequest('task:sentinel-conflict', 'sentinel-conflict');
      await stack.effects.approve(sentinel);
      await resultOf(stack, sentinel.effectId);
      const [post] = await assertProviderSaw(stack, 'refund:cli-1', { posts: 1 });
      assert.equal(post!.bodySha256, (await stack.effects.status('refund:cli-1')).trail.releases[0]!.bodySha256);
      assert.equal(await latestRunId(stack, 'refund:cli-1'), runBefore, 'no new run');
      const listed = await runCli(stack, ['list', '--stage', 'recorded', '--json']);
      assert.equal(listed.code, 0, listed.stderr);
      assert.ok(
        (JSON.parse(listed.stdout) as Array<{ effectId: string; stage: string }>).some(
          (e) => e.effectId === 'refund:cli-1' && e.stage === 'recorded',
        ),
      );
      const status = await runCli(stack, ['status', 'refund:cli-1']);
      assert.equal(status.code, 0, status.stderr);
      assert.match(status.stdout, /attempt 1 key=refund:cli-1 .* → confirmed \(HTTP 200\)/);
    },
  );
});
