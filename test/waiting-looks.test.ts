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
      const windowBegan = Date.now();
      await waitFor(async () => (await looksOf(stack, effectId)) >= looksBefore + 5, 'five more looks');
      assert.equal(await historyLength(stack, effectId), eventsBefore, 'five looks, not one history event');
      const { raw } = await stack.env.client.workflow.getHandle(effectId).describe();
      const [pending] = raw.pendingActivities ?? [];
      assert.equal(pending?.activityType?.name, 'watchForObject');
      assert.match(pending?.lastFailure?.message ?? '', /^looked at .*: absent \(complete, .*\); next look at /);
      assert.ok((pending?.attempt ?? 0) >= 5, `the looks are its attempts (${pending?.attempt})`);
      // A look that ends within seconds sends no heartbeat: each would be one more write to the workflow's state.
      const beat = pending?.lastHeartbeatTime?.seconds;
      assert.ok(beat == null || Number(beat) * 1000 < windowBegan, `five quick looks, no heartbeat (last at ${beat})`);
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
    // A feed that takes two readback requests a second, and twenty-four posts waiting on it, each due to look again
    // every 100 ms: far more looks are due than the rate serves, so they queue.
    const slowFeed = (settings: Parameters<typeof createDestinations>[0]): Destinations => {
      const all = createDestinations(settings);
      const feed = all['social-feed'];
      assert.ok(feed);
      return { ...all, 'social-feed': { ...feed, readbackRatePerSecond: 2 } };
    };
    const busy = stack.effectsWith({ readbackIntervalMs: 100, readbackMaxIntervalMs: 100 });
    const waiting = Array.from({ length: 24 }, (_, i) => `looks:queue-${i + 1}`);
    await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts', count: waiting.length + 1 });
    await stack.withWorker(
      async () => {
        for (const id of waiting) await busy.approve(postRequest(id, `Looks: waiting ${id}`));
        for (const id of waiting) await waitForStage(stack, id, 'unknown', 'a human decision');
        const newcomer = 'looks:newcomer';
        await busy.approve(postRequest(newcomer, 'Looks: a first look'));
        await waitFor(async () => (await looksOf(stack, newcomer)) > 0, "the newcomer's first look");
        // From the moment the server holds the newcomer's first look (its scheduled event) to the moment a worker
        // began it: how many repeat looks of the others began in between (`readBegan`, when the activity started,
        // by the ledger's clock) — the order the server hands looks out in, which is what priority decides. Looks a
        // worker already held when the newcomer was scheduled began before and do not count, however long a loaded
        // machine takes to finish them (counting by when their evidence was recorded, CI once saw 10).
        const { events } = await stack.env.client.workflow.getHandle(newcomer).fetchHistory();
        const scheduled = events?.find(
          (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'watchForObject',
        );
        assert.ok(scheduled?.eventTime?.seconds != null, "the newcomer's first look is in its history");
        const scheduledAt = new Date(
          Number(scheduled.eventTime.seconds) * 1000 + Math.floor((scheduled.eventTime.nanos ?? 0) / 1e6),
        );
        const [firstLook] = await stack.ledger.sql<{ began: string }[]>`
          SELECT detail->>'readBegan' AS began FROM provider_evidence WHERE effect_id = ${newcomer} AND kind = 'readback'
          ORDER BY evidence_id LIMIT 1`;
        assert.ok(firstLook?.began, "the newcomer's first look says when it began");
        const [counted] = await stack.ledger.sql<{ between: number }[]>`
          SELECT count(*)::int AS between FROM provider_evidence
          WHERE kind = 'readback' AND effect_id <> ${newcomer}
            AND (detail->>'readBegan')::timestamptz > ${scheduledAt.toISOString()}::timestamptz
            AND (detail->>'readBegan')::timestamptz < ${firstLook.began}::timestamptz`;
        const between = counted?.between ?? 0;
        // Priority lets through only the looks already in the readback worker's hands and the turns they took: 1–3
        // here (2026-12-06), 1–3 with three CPU hogs beside it. At one priority the backlog goes first: 8–70 in six
        // runs (the paced retries keep it from being all 24 at once). A quarter of the waiting is the line.
        assert.ok(
          between <= waiting.length / 4,
          `${between} repeat looks went ahead of the newcomer's first (${waiting.length} effects wait, each always due)`,
        );
      },
      { adapters: slowFeed },
    );
  });
});
