// A person settles many waiting effects at once — from the CLI (`effect decide --where … --yes`, a dry run first,
// each decision bound to what the dry run saw) and through Temporal's own batch signal by query (what an operator
// reaches for in the Web UI). Either way, an effect that moved on since refuses the decision as stale, per effect,
// and the ledger says so; the others are decided once.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { liveStatus, looksOf, resultOf, socialPostsFor, waitForStage } from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { postRequest } from '../harness/sample-requests.js';
import { waitFor } from '../stack/wait-for.js';
import { runCli, temporalCli } from './support/cli.js';

const OPS = 'ops@example.com';

let stack: Stack;
let worker: { stop(): Promise<void> };
before(async () => {
  // Looks an hour apart: nothing but a decision moves these effects while the test runs.
  stack = await startStack({ purpose: 'bulk', readbackIntervalMs: 3_600_000, readbackMaxIntervalMs: 3_600_000 });
  worker = await stack.startWorker();
});
after(async () => {
  await worker?.stop();
  await stack?.stop();
});

/** Key-less posts lost before the feed stored them: each waits in UNKNOWN for a person. */
async function waitingPosts(prefix: string, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `${prefix}-${i + 1}`);
  await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts', count });
  for (const id of ids) await stack.effects.approve(postRequest(id, `Bulk: ${id}`));
  for (const id of ids) await waitForStage(stack, id, 'unknown', 'a human decision');
  return ids;
}

/** One of them moves on after the dry run: a person approves its retry, which is lost again (attempt 2). */
async function moveOn(effectId: string): Promise<void> {
  await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts', count: 1 });
  await stack.effects.decide(effectId, 'approve-retry', { actor: OPS, reason: 'one by hand', attempt: 1 });
  await waitFor(async () => {
    const s = await liveStatus(stack, effectId);
    return s.stage === 'unknown' && s.decideOn?.attempt === 2 && s.awaiting?.includes('a human decision');
  }, `${effectId} to wait again, on attempt 2`);
}

async function decisionsOf(effectId: string) {
  return (await stack.effects.status(effectId)).trail.decisions;
}

describe('bulk decisions', () => {
  test('effect decide --where: a dry run, then each decision bound to what it saw; the one that moved on is refused as stale', async () => {
    const ids = await waitingPosts('bulk:cli', 4);
    const where = `EffectDestination = "social-feed" AND EffectAwaiting = "person" AND WorkflowId STARTS_WITH "bulk:cli-"`;
    const plan = join(mkdtempSync(join(tmpdir(), 'bulk-plan-')), 'plan.json');
    await waitFor(
      async () =>
        (await stack.env.client.workflow.count(`${where} AND ExecutionStatus = "Running"`)).count === ids.length,
      'visibility to show the four waiting for a person',
    );

    const dry = await runCli(stack, [
      'decide',
      '--where',
      where,
      '--approve-retry',
      '--actor',
      OPS,
      '--reason',
      'the feed was down; it is back',
      '--save-plan',
      plan,
    ]);
    assert.equal(dry.code, 0, dry.stderr);
    for (const id of ids)
      assert.match(dry.stdout, new RegExp(`approve-retry ${id} \\(bound to step main, revision 1, attempt 1\\)`));
    assert.match(dry.stdout, /dry run: nothing sent/);
    for (const id of ids) assert.equal((await decisionsOf(id)).length, 0, 'the dry run decided nothing');

    const [moved, ...rest] = ids as [string, ...string[]];
    await moveOn(moved);
    const sent = await runCli(stack, ['decide', '--plan', plan, '--yes']);
    assert.equal(sent.code, 5, `a refusal is exit 5: ${sent.stdout}${sent.stderr}`);
    assert.match(sent.stdout, /\| accepted \| 3 \|/);
    assert.match(sent.stdout, new RegExp(`refused ${moved}: stale: it answers attempt 1; the effect is on attempt 2`));

    for (const id of rest) {
      assert.equal((await resultOf(stack, id)).stage, 'recorded');
      assert.equal((await socialPostsFor(stack, id)).length, 1, `${id}: one post`);
    }
    const movedDecisions = await decisionsOf(moved);
    assert.ok(
      movedDecisions.some((d) => !d.accepted && /stale: it answers attempt 1/.test(d.rejectionReason ?? '')),
      'the stale decision is in the ledger, refused, with why',
    );
    assert.equal((await liveStatus(stack, moved)).stage, 'unknown', 'still waiting: nothing was sent for it');

    // The same plan sent again decides nothing twice (each decision is named by the batch and the effect: Temporal
    // answers a finished effect's update by its ID with the answer it gave).
    await runCli(stack, ['decide', '--plan', plan, '--yes', '--json']);
    for (const id of rest) {
      assert.equal((await socialPostsFor(stack, id)).length, 1, `${id}: still one post`);
      const accepted = (await decisionsOf(id)).filter((d) => d.kind === 'approve-retry' && d.accepted);
      assert.equal(accepted.length, 1, `${id}: one accepted decision in the ledger`);
    }
  });

  test('effect decide --look-now: planned from the workflow list (no query per effect), then every waiting effect takes a look now', async () => {
    const ids = await waitingPosts('bulk:look', 2);
    const where = `EffectAwaiting = "person" AND WorkflowId STARTS_WITH "bulk:look-"`;
    await waitFor(
      async () =>
        (await stack.env.client.workflow.count(`${where} AND ExecutionStatus = "Running"`)).count === ids.length,
      'visibility to show the two waiting for a person',
    );
    const looksBefore = await Promise.all(ids.map((id) => looksOf(stack, id)));
    const who = ['--actor', OPS, '--reason', 'the feed is back'];
    const dry = await runCli(stack, ['decide', '--where', where, '--look-now', ...who]);
    assert.equal(dry.code, 0, dry.stderr);
    for (const id of ids) assert.match(dry.stdout, new RegExp(`look-now ${id}: person`));
    const sent = await runCli(stack, ['decide', '--where', where, '--look-now', ...who, '--yes']);
    assert.equal(sent.code, 0, `${sent.stdout}${sent.stderr}`);
    // Each took a look, in the ledger (looks are an hour apart here; the feed still has no post: it waits on).
    for (const [i, id] of ids.entries())
      await waitFor(async () => (await looksOf(stack, id)) > looksBefore[i]!, `${id} to take a look now`);
  });

  test("Temporal's batch signal by query: each effect takes the signal for its own episode; one bound to another attempt is refused", async () => {
    const ids = await waitingPosts('bulk:batch', 3);
    const [moved, ...rest] = ids as [string, ...string[]];
    await moveOn(moved);
    const query = 'EffectAwaiting = "person" AND WorkflowId STARTS_WITH "bulk:batch-"';
    await waitFor(
      async () => (await stack.env.client.workflow.count(`${query} AND ExecutionStatus = "Running"`)).count === 3,
      'visibility to show the three waiting for a person',
    );
    await temporalCli(stack, [
      'workflow',
      'signal',
      '--query',
      query,
      '--name',
      'approve-retry',
      '--input',
      JSON.stringify({ actor: OPS, reason: 'the feed is back', attempt: 1 }),
      '--reason',
      'the feed is back',
      '--yes',
    ]);
    for (const id of rest) assert.equal((await resultOf(stack, id)).stage, 'recorded');
    await waitFor(
      async () => (await decisionsOf(moved)).some((d) => !d.accepted && /stale/.test(d.rejectionReason ?? '')),
      'the moved effect to refuse the batch signal as stale',
    );
    for (const id of ids) assert.equal((await socialPostsFor(stack, id)).length, id === moved ? 0 : 1);
  });
});
