// Never lost: an effect the ledger shows as unfinished always gets a running workflow again — after the
// approver died between its ledger write and the workflow start, or after its run was terminated — and a
// resumed run reads back before it sends anything. The ledger reconciler (a Temporal Schedule) does it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { approvalRecords, validateEffectRequest } from '../client/effect-request.js';
import { liveStatus, objectsFor, waitForStage } from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { taskRequest } from '../harness/sample-requests.js';
import { registerEffect } from '../ledger/registration.js';
import { readEffect } from '../ledger/trail.js';
import { waitFor } from '../stack/wait-for.js';
import { ensureReconcilerSchedule, LEDGER_RECONCILER_SCHEDULE_ID } from '../workers/ledger-reconciler.js';

describe('never lost: the ledger reconciler resumes unfinished effects', { timeout: 240_000 }, () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ callTimeoutMs: 1500, purpose: 'neverlost' });
    await ensureReconcilerSchedule(stack.env.client, { taskQueue: stack.taskQueue, everyMs: 1000, olderThanMs: 0 });
  });
  after(() => stack?.stop());

  const posts = async () => (await stack.simulator.stats()).posts['/v1/objects'] ?? 0;
  const stageOf = async (effectId: string) => (await readEffect(stack.ledger.db, effectId))?.stage;
  /** The ledger says recorded and the latest run has completed (so nothing is left for a worker to do). */
  const settled = (effectId: string) =>
    waitFor(
      async () =>
        (await stageOf(effectId)) === 'recorded' &&
        (await stack.env.client.workflow.getHandle(effectId).describe()).status.name === 'COMPLETED',
      `${effectId} recorded by a resumed run, its run completed`,
      90_000,
    );
  const runsOf = async (effectId: string) => {
    let runs = 0;
    for await (const _ of stack.env.client.workflow.list({ query: `WorkflowId = '${effectId}'` })) runs += 1;
    return runs;
  };

  /** What approve() writes before it starts the workflow: the state an approver that died leaves behind. */
  async function registerWithoutWorkflow(request: ReturnType<typeof taskRequest>) {
    const { registration, release } = approvalRecords(validateEffectRequest(request));
    await registerEffect(stack.ledger.db, registration, release);
  }

  test('the schedule is registered once, visible to operators', async () => {
    await ensureReconcilerSchedule(stack.env.client, { taskQueue: stack.taskQueue, everyMs: 1000, olderThanMs: 0 });
    const description = await stack.env.client.schedule.getHandle(LEDGER_RECONCILER_SCHEDULE_ID).describe();
    assert.equal(description.action.type, 'startWorkflow');
  });

  test('an approval with no workflow (the approver died after its ledger write) is resumed and recorded, once', async () => {
    const effectId = 'task:orphaned';
    await registerWithoutWorkflow(taskRequest(effectId, 'request-orphan'));
    const before = await posts();
    await stack.withWorker(() => settled(effectId));
    assert.equal((await objectsFor(stack, effectId)).length, 1);
    assert.equal((await posts()) - before, 1, 'one POST');
    assert.equal(await runsOf(effectId), 1);
  });

  test('a run terminated mid-call is resumed; the new run reads back first and never sends again', async () => {
    const effectId = 'task:terminated';
    // The provider stores the object and holds its answer: the run is terminated while the call is open.
    await stack.simulator.fault('delay_after_commit', { path: '/v1/objects', delayMs: 8000 });
    const before = await posts();
    await stack.withWorker(async () => {
      await stack.effects.approve(taskRequest(effectId, 'request-terminated'));
      await waitFor(async () => (await posts()) > before, 'the request to reach the provider');
      await stack.env.client.workflow.getHandle(effectId).terminate('an operator terminated it in the UI');
      await settled(effectId);
    });
    assert.equal((await objectsFor(stack, effectId)).length, 1);
    assert.equal((await posts()) - before, 1, 'the resumed run sent nothing');
    const { trail } = await stack.effects.status(effectId);
    assert.equal(trail.attempts.length, 1);
    assert.equal(trail.fact?.confirmedBy, 'readback');
    assert.equal(await runsOf(effectId), 2);
  });

  test('a run terminated while it pauses after "not sent" is resumed sending again: a keyed task, no readback, no person asked', async () => {
    // Chaos seed 4242 (unknown_without_send): the resumed run started in UNKNOWN, read back and waited for a person
    // about a request the provider had said it never processed. (Keyed since issue 26: a key-less 429 is unknown.)
    const effectId = 'task:terminated-not-sent';
    await stack.simulator.fault('status_429_before_commit', { path: '/v1/objects', count: 100 });
    await stack.withWorker(async () => {
      await stack.effects.approve(taskRequest(effectId, 'terminated-not-sent', 'Paused, then terminated'));
      await waitForStage(stack, effectId, 'attempted', 'not sent');
      await stack.simulator.clearFaults();
      await stack.env.client.workflow.getHandle(effectId).terminate('an operator terminated it during its pause');
      const outcome = await waitFor(async () => {
        if ((await stageOf(effectId)) === 'recorded') return 'recorded';
        const live = await liveStatus(stack, effectId).catch(() => undefined);
        return live?.awaiting?.includes('a human decision') ? `waits for a person: ${live.awaiting}` : undefined;
      }, `${effectId} recorded by its resumed run, or waiting for a person`);
      assert.equal(outcome, 'recorded');
    });
    assert.equal((await objectsFor(stack, effectId)).length, 1);
    const { trail } = await stack.effects.status(effectId);
    const answers = trail.evidence.filter((e) => e.kind === 'response').map((e) => e.outcome);
    assert.equal(answers.at(-1), 'confirmed');
    assert.ok(
      answers.slice(0, -1).every((a) => a === 'not_sent'),
      `every earlier answer was "not sent": ${answers}`,
    );
    assert.equal(trail.evidence.filter((e) => e.kind === 'readback').length, 0, 'nothing to read back');
    assert.equal(await runsOf(effectId), 2);
  });

  test('re-approving an effect whose run was terminated resumes it (no reconciler needed)', async () => {
    const effectId = 'task:reapproved';
    await stack.env.client.schedule.getHandle(LEDGER_RECONCILER_SCHEDULE_ID).pause('this test shows approve alone');
    try {
      await stack.simulator.fault('delay_after_commit', { path: '/v1/objects', delayMs: 8000 });
      const before = await posts();
      await stack.withWorker(async () => {
        await stack.effects.approve(taskRequest(effectId, 'request-reapproved'));
        await waitFor(async () => (await posts()) > before, 'the request to reach the provider');
        await stack.env.client.workflow.getHandle(effectId).terminate('terminated');
        const again = await stack.effects.approve(taskRequest(effectId, 'request-reapproved'));
        assert.equal(again.created, false);
        const result = await stack.effects.result(effectId);
        assert.equal(result.stage, 'recorded');
      });
      assert.equal((await objectsFor(stack, effectId)).length, 1);
      assert.equal((await posts()) - before, 1);
    } finally {
      await stack.env.client.schedule.getHandle(LEDGER_RECONCILER_SCHEDULE_ID).unpause();
    }
  });
});
