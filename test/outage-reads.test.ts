// Reads during an outage: `list` and `status` answer from the ledger within a bounded time when Temporal
// cannot be reached or no worker polls, and say which part they could not see.
import assert from 'node:assert/strict';
import { type AddressInfo, createServer } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { runEffect, waitForStage } from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { postRequest, taskRequest } from '../harness/sample-requests.js';
import { runCli } from './support/cli.js';
import { leftOpenOnPurpose, TEST_TIMEOUT } from './support/isolation.js';

/** An address where nothing answers: Temporal is down. */
async function deadAddress(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `127.0.0.1:${port}`;
}

describe('reads during an outage', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ purpose: 'outage' });
  });
  after(() => stack?.stop());

  test(
    'with Temporal unreachable, list and status answer from the ledger and say what they could not see',
    TEST_TIMEOUT,
    async () => {
      await runEffect(stack, taskRequest('task:outage', 'request-outage'));
      const down = { TEMPORAL_ADDRESS: await deadAddress() };
      const started = performance.now();
      const listed = await runCli(stack, ['list', '--stage', 'recorded', '--json'], undefined, down);
      assert.equal(listed.code, 0, listed.stderr);
      assert.deepEqual(
        (JSON.parse(listed.stdout) as Array<{ effectId: string }>).map((r) => r.effectId),
        ['task:outage'],
      );
      const status = await runCli(stack, ['status', 'task:outage', '--json'], undefined, down);
      assert.equal(status.code, 0, status.stderr);
      const report = JSON.parse(status.stdout) as { trail: { effect: { stage: string } }; liveUnavailable?: string };
      assert.equal(report.trail.effect.stage, 'recorded');
      assert.match(report.liveUnavailable ?? '', /did not answer within/);
      const seconds = (performance.now() - started) / 1000;
      assert.ok(seconds < 60, `both answered (${seconds.toFixed(1)} s, two CLI processes included)`);
    },
  );

  test(
    'with no worker polling, status of an open effect answers within seconds, from the ledger',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'post:no-worker';
      await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
      const quick = stack.effectsWith({ callTimeoutMs: 2000 });
      await stack.withWorker(async () => {
        await quick.approve(postRequest(effectId, 'Nobody polls'));
        await waitForStage(stack, effectId, 'unknown', 'a human decision');
      });
      leftOpenOnPurpose.add(effectId);
      const report = await stack.effects.status(effectId);
      assert.equal(report.trail.effect.stage, 'unknown');
      assert.equal(report.live, null);
      assert.match(report.liveUnavailable ?? '', /no worker polling/);
      await stack.env.client.workflow.getHandle(effectId).terminate('test over');
    },
  );
});
