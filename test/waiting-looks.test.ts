// What a wait in UNKNOWN costs and how it answers (issue: an outage costs almost nothing while it lasts): its looks
// are the retries of one activity, so they add no history events, yet each leaves its evidence in the ledger and
// the Web UI's pending activity says what the last one saw and when the next one is; a person's decision interrupts
// an hour-long wait at once; and the first look at an effect goes ahead of the repeat looks of effects that wait.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Destinations } from '../activities/destinations/registry.js';
import { createDestinations } from '../activities/destinations/registry.js';
import { historyLength, liveStatus, looksOf, resultOf, waitForStage } from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { postRequest } from '../harness/sample-requests.js';
import { waitFor, within } from '../stack/wait-for.js';
import { decideUpdate } from '../workflows/contract.js';

const OPS = 'ops@example.com';

let stack: Stack;
before(async () => {
  stack = await startStack({ purpose: 'looks' });
});
after(() => stack?.stop());

describe('a wait in UNKNOWN', () => {
  test('its looks add no history events; each is in the ledger, and the pending activity shows the last and the next', async () => {
    const effectId = 'looks:no-events';
    const watchful = stack.effectsWith({ readbackIntervalMs: 200, readbackMaxIntervalMs: 200 });
    await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
    await stack.withWorker(async () => {
      await watchful.approve(postRequest(effectId, 'Looks: no events'));
      await waitForStage(stack, effectId, 'unknown', 'a human decision');
      const looksBefore = await looksOf(stack, effectId);
      const eventsBefore = await historyLength(stack, effectId);
      await waitFor(async () => (await looksOf(stack, effectId)) >= looksBefore + 5, 'five more looks');
      assert.equal(await historyLength(stack, effectId), eventsBefore, 'five looks, not one history event');
      const { raw } = await stack.env.client.workflow.getHandle(effectId).describe();
      const [pending] = raw.pendingActivities ?? [];
      assert.equal(pending?.activityType?.name, 'watchForObject');
      assert.match(pending?.lastFailure?.message ?? '', /^looked at .*: absent \(complete, .*\); next look at /);
      assert.ok((pending?.attempt ?? 0) >= 5, `the looks are its attempts (${pending?.attempt})`);
      const live = await liveStatus(stack, effectId);
      assert.match(live.awaiting ?? '', /the pending activity watchForObject shows each look/);
      await stack.effects.decide(effectId, 'abandon', { actor: OPS, reason: 'campaign cancelled' });
      assert.equal((await resultOf(stack, effectId)).stage, 'abandoned');
    });
  });

  test('a decision during an hour-long wait between looks is answered at once, not at the next look', async () => {
    const effectId = 'looks:hour';
    const patient = stack.effectsWith({ readbackIntervalMs: 3_600_000, readbackMaxIntervalMs: 3_600_000 });
    await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
    await stack.withWorker(async () => {
      await patient.approve(postRequest(effectId, 'Looks: an hour apart'));
      await waitForStage(stack, effectId, 'unknown', 'a human decision');
      const looks = await looksOf(stack, effectId);
      const answer = await within(
        stack.env.client.workflow
          .getHandle(effectId)
          .executeUpdate(decideUpdate, { args: [{ decision: 'approve-retry', actor: OPS, reason: 'feed is back' }] }),
        'the decision to be answered before the next look, an hour away',
        60_000,
      );
      assert.equal(answer.accepted, true);
      assert.equal((await resultOf(stack, effectId)).stage, 'recorded');
      // The wait's one look, and the fresh look before the retry: no scheduled look came in between.
      assert.equal(await looksOf(stack, effectId), looks + 1);
    });
  });

  test("an effect's first look goes ahead of the repeat looks of the effects already waiting", async () => {
    // A feed that takes two readback requests a second, and twelve posts waiting on it, each due to look again
    // every 100 ms: far more looks are due than the rate serves, so they queue.
    const slowFeed = (settings: Parameters<typeof createDestinations>[0]): Destinations => {
      const all = createDestinations(settings);
      const feed = all['social-feed'];
      assert.ok(feed);
      return { ...all, 'social-feed': { ...feed, readbackRatePerSecond: 2 } };
    };
    const busy = stack.effectsWith({ readbackIntervalMs: 100, readbackMaxIntervalMs: 100 });
    const waiting = Array.from({ length: 12 }, (_, i) => `looks:queue-${i + 1}`);
    await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts', count: waiting.length + 1 });
    await stack.withWorker(
      async () => {
        for (const id of waiting) await busy.approve(postRequest(id, `Looks: waiting ${id}`));
        for (const id of waiting) await waitForStage(stack, id, 'unknown', 'a human decision');
        const newcomer = 'looks:newcomer';
        await busy.approve(postRequest(newcomer, 'Looks: a first look'));
        await waitFor(async () => (await looksOf(stack, newcomer)) > 0, "the newcomer's first look");
        // Every row of provider evidence in the order the ledger took it: how many repeat looks went between the
        // newcomer's answer (its attempt's evidence) and its first look.
        const rows = await stack.ledger.sql<{ effect_id: string; kind: string }[]>`
          SELECT effect_id, kind FROM provider_evidence ORDER BY evidence_id`;
        const answered = rows.findIndex((r) => r.effect_id === newcomer);
        const looked = rows.findIndex((r, i) => i > answered && r.effect_id === newcomer && r.kind === 'readback');
        const between = rows.slice(answered + 1, looked).filter((r) => r.kind === 'readback').length;
        // Priority lets through only looks already dispatched or due inside the newcomer's in-flight window: 3 on a
        // quiet machine, 4 under load 16 (a full suite). With every look at one priority, 7 went first on a quiet
        // machine (2026-12-05): half the queue is the line between the two.
        assert.ok(
          between <= waiting.length / 2,
          `${between} repeat looks went ahead of the newcomer's first (${waiting.length} effects wait, each always due)`,
        );
      },
      { adapters: slowFeed },
    );
  });
});
