// A look now that costs the workflow nothing (issue 30): where a waiting effect's look waits out its retry delay, the
// client's lookNow (and `effect-ledger decide --look-now`) resets its watchForObject activity, Temporal's activity
// reset: the delay is discarded and the look is taken at once — no signal, no workflow task, no history event. An
// operator can do the same in bulk from Temporal's CLI (`temporal activity reset --query …`).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { historyLength, looksOf, resultOf, waitForStage } from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { postRequest } from '../harness/sample-requests.js';
import { waitFor } from '../stack/wait-for.js';
import { temporalCli } from './support/cli.js';

const OPS = 'ops@example.com';

let stack: Stack;
before(async () => {
  stack = await startStack({ purpose: 'lookreset' });
});
after(() => stack?.stop());

/** A lost post waiting for a person, its looks an hour apart: no scheduled look comes during a test. */
async function waitingAnHour(effectId: string) {
  const patient = stack.effectsWith({ readbackIntervalMs: 3_600_000, readbackMaxIntervalMs: 3_600_000 });
  await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
  await patient.approve(postRequest(effectId, `Reset: ${effectId}`));
  await waitForStage(stack, effectId, 'unknown', 'a human decision');
  return { looks: await looksOf(stack, effectId), events: await historyLength(stack, effectId) };
}

async function abandon(effectId: string) {
  // Its post failed before commit (the simulator's fault): the test's word that none is there.
  await stack.effects.decide(effectId, 'abandon', { actor: OPS, reason: 'campaign cancelled', checkedAbsent: true });
  assert.equal((await resultOf(stack, effectId)).stage, 'abandoned');
}

describe('a look now by activity reset', () => {
  test("during an hour-long wait, the client's lookNow resets the waiting look: it is taken at once and writes no history", async () => {
    const effectId = 'reset:client';
    await stack.withWorker(async () => {
      const before = await waitingAnHour(effectId);
      assert.equal(await stack.effects.lookNow(effectId, { actor: OPS, reason: 'the feed is back' }), 'reset');
      await waitFor(async () => (await looksOf(stack, effectId)) > before.looks, 'a look after the reset', 30_000);
      assert.equal(await historyLength(stack, effectId), before.events, 'the look now wrote no history event');
      const { raw } = await stack.env.client.workflow.getHandle(effectId).describe();
      assert.match(raw.pendingActivities?.[0]?.lastFailure?.message ?? '', /^looked at .*; next look at /);
      await abandon(effectId);
    });
  });

  test("Temporal's batch activity reset by query does the same for every effect it matches", async () => {
    const ids = ['reset:batch-1', 'reset:batch-2'];
    await stack.withWorker(async () => {
      const before: { looks: number; events: number }[] = [];
      for (const id of ids) before.push(await waitingAnHour(id));
      const query = 'EffectAwaiting = "person" AND WorkflowId STARTS_WITH "reset:batch-"';
      await waitFor(
        async () => (await stack.env.client.workflow.count(`${query} AND ExecutionStatus = "Running"`)).count === 2,
        'visibility to show the two waiting for a person',
      );
      // As docs/operators.md gives it.
      await temporalCli(stack, [
        'activity',
        'reset',
        '--query',
        query,
        '--activity-type',
        'watchForObject',
        '--reason',
        'the feed is back',
        '--yes',
      ]);
      for (const [i, id] of ids.entries()) {
        await waitFor(async () => (await looksOf(stack, id)) > (before[i]?.looks ?? 0), `${id} to look now`, 60_000);
        assert.equal(await historyLength(stack, id), before[i]?.events, `${id}: no history event`);
      }
      for (const id of ids) await abandon(id);
    });
  });
});
