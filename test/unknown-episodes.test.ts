// What issue 10 found outside the test plan, each made impossible: a prompt human retry on a key-less
// destination while our request may still be processed; a decision applied to a later UNKNOWN episode than
// the one it answered; a decision re-sent after a client timeout counting twice; an effect the provider
// keeps refusing that nobody can stop.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createDestinations, type DestinationSettings } from '../activities/destinations/registry.js';
import type { DestinationAdapter } from '../domain/destination-contract.js';
import { assertProviderSaw, liveStatus, resultOf, socialPostsFor, waitForStage } from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { postRequest, refundRequest } from '../harness/sample-requests.js';
import { waitFor } from '../stack/wait-for.js';
import { abandonSignal, approveRetrySignal } from '../workflows/contract.js';
import { isolateEachTest, TEST_TIMEOUT } from './support/isolation.js';

const HOLD_MS = 600_000;

describe('UNKNOWN episodes: grace, stale decisions, update IDs, abandon while refused', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ readbackIntervalMs: 1000, purpose: 'episodes' });
  });
  after(() => stack?.stop());
  isolateEachTest(() => stack);

  test(
    'key-less: a retry approved while our request may still be processed waits it out, reads back, and records the late post — no second post',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'post:grace';
      // The provider holds our request (it will commit it); readback must not call that absence.
      const patient = stack.effectsWith({ callTimeoutMs: 2000, absenceGraceMs: 6000 });
      await stack.simulator.fault('delay_before_commit', { path: '/social/v1/posts', delayMs: HOLD_MS });
      const result = await stack.withWorker(async () => {
        await patient.approve(postRequest(effectId, 'Launch, once'));
        const waiting = await waitForStage(stack, effectId, 'unknown', 'may still be in flight');
        assert.equal(waiting.readbacks.at(-1)?.outcome, 'inconclusive');
        // An operator approves a retry at once, as the guide allows: it is accepted, but nothing leaves yet.
        const answer = await patient.decide(effectId, 'approve-retry', {
          actor: 'ops@example.com',
          reason: 'looks lost',
        });
        assert.equal(answer.accepted, true);
        await waitForStage(stack, effectId, 'unknown', 'retry approved; first waiting until');
        assert.equal(await stack.simulator.releaseDelays(), 1, 'the provider commits our first request now');
        return resultOf(stack, effectId);
      });
      assert.equal(result.stage, 'recorded');
      assert.equal((await socialPostsFor(stack, effectId)).length, 1, 'one post');
      await assertProviderSaw(stack, effectId, { posts: 1 });
      const { trail } = await stack.effects.status(effectId);
      assert.equal(trail.attempts.length, 1);
      assert.equal(trail.fact?.confirmedBy, 'readback');
    },
  );

  test(
    'a decision queued while its UNKNOWN episode ends is refused as stale and recorded, never applied to the next',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'post:stale';
      const quick = stack.effectsWith({ callTimeoutMs: 2000 });
      await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
      const result = await stack.withWorker(async () => {
        await quick.approve(postRequest(effectId, 'Stale decisions'));
        await waitForStage(stack, effectId, 'unknown', 'a human decision');
        const handle = stack.env.client.workflow.getHandle(effectId);
        // Two operators at once: the retry ends the episode; the abandon answered that same episode.
        await handle.signal(approveRetrySignal, { actor: 'ana@example.com', reason: 'retry it' });
        await handle.signal(abandonSignal, { actor: 'bob@example.com', reason: 'drop it' });
        return resultOf(stack, effectId);
      });
      assert.equal(result.stage, 'recorded', 'the abandon was not applied to the retry that followed');
      const { trail } = await stack.effects.status(effectId);
      const abandon = trail.decisions.find((d) => d.kind === 'abandon');
      assert.equal(abandon?.accepted, false);
      assert.match(abandon?.rejectionReason ?? '', /stale|superseded/);
      assert.equal(trail.decisions.find((d) => d.kind === 'approve-retry')?.accepted, true);
      await assertProviderSaw(stack, effectId, { posts: 2 });
    },
  );

  test('a decision naming an attempt the effect has moved past is refused as stale', TEST_TIMEOUT, async () => {
    const effectId = 'post:attempt-bound';
    const quick = stack.effectsWith({ callTimeoutMs: 2000 });
    await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
    await stack.withWorker(async () => {
      await quick.approve(postRequest(effectId, 'Bound decisions'));
      await waitForStage(stack, effectId, 'unknown', 'a human decision');
      const stale = await quick.decide(effectId, 'abandon', {
        actor: 'ops@example.com',
        reason: 'old page',
        attempt: 7,
      });
      assert.equal(stale.accepted, false);
      assert.match(stale.reason ?? '', /stale: it answers attempt 7; the effect is on attempt 1/);
      const current = await quick.decide(effectId, 'abandon', { actor: 'ops@example.com', reason: 'drop', attempt: 1 });
      assert.deepEqual(current, { accepted: true, stage: 'abandoned' });
    });
    assert.equal((await stack.effects.status(effectId)).trail.effect.stage, 'abandoned');
  });

  test(
    'while a person is awaited, readback backs off: each wait twice the last, up to the cap',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'post:backoff';
      const patient = stack.effectsWith({
        callTimeoutMs: 2000,
        readbackIntervalMs: 500,
        readbackMaxIntervalMs: 60_000,
      });
      await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
      await stack.withWorker(async () => {
        await patient.approve(postRequest(effectId, 'Backing off'));
        const at = await waitFor(
          async () => {
            const rows = (await stack.effects.status(effectId)).trail.evidence.filter((e) => e.kind === 'readback');
            return rows.length >= 5 ? rows.map((r) => r.recordedAt.getTime()) : undefined;
          },
          'five readbacks',
          120_000,
        );
        // Readbacks 2..5 follow waits of at least 0.5, 1, 2, 4 s (a fixed interval would give 0.5 s each).
        const gaps = at.slice(1).map((t, i) => t - (at[i] ?? t));
        assert.ok((gaps[3] ?? 0) >= 4000, `the fourth wait is at least 4 s: ${gaps.join(', ')} ms`);
        assert.ok((gaps[2] ?? 0) >= 2000, `the third wait is at least 2 s: ${gaps.join(', ')} ms`);
        await patient.decide(effectId, 'abandon', { actor: 'ops@example.com', reason: 'enough' });
        await resultOf(stack, effectId);
      });
    },
  );

  test('a decision re-sent with the same decision ID (a client timeout) is one decision', TEST_TIMEOUT, async () => {
    const effectId = 'post:once';
    const quick = stack.effectsWith({ callTimeoutMs: 2000 });
    await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
    const answers = await stack.withWorker(async () => {
      await quick.approve(postRequest(effectId, 'One decision'));
      await waitForStage(stack, effectId, 'unknown', 'a human decision');
      const payload = { actor: 'ops@example.com', reason: 'campaign cancelled' };
      return Promise.all([
        quick.decide(effectId, 'abandon', payload, 'ticket-42'),
        quick.decide(effectId, 'abandon', payload, 'ticket-42'),
      ]);
    });
    assert.deepEqual(answers[0], answers[1]);
    assert.equal(answers[0]?.accepted, true);
    const { trail } = await stack.effects.status(effectId);
    assert.deepEqual(
      trail.decisions.map((d) => [d.kind, d.accepted, d.requestRef]),
      [['abandon', true, 'update:ticket-42']],
    );
  });

  test(
    'an effect the provider keeps refusing ("not sent") can be abandoned: nothing is in flight',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'refund:rate-limited';
      await stack.simulator.fault('status_429_before_commit', { path: '/v1/objects', count: 50 });
      const answer = await stack.withWorker(async () => {
        await stack.effects.approve(refundRequest(effectId, 1200));
        await waitFor(async () => {
          const s = await liveStatus(stack, effectId);
          return s.attempts.length >= 2 && s.awaiting?.includes('retry with the same key') ? s : undefined;
        }, 'a second refused attempt and a pause');
        const abandoned = await stack.effects.decide(effectId, 'abandon', {
          actor: 'ops@example.com',
          reason: 'provider rate-limits us all day; refund by hand',
        });
        await resultOf(stack, effectId);
        return abandoned;
      });
      assert.deepEqual(answer, { accepted: true, stage: 'abandoned' });
      const refused = await stack.simulator.requests({ method: 'POST', path: '/v1/objects' });
      assert.ok(
        refused.every((r) => r.status === 429),
        'every request was refused before commit',
      );
      assert.ok((await stack.simulator.clearFaults()) > 0, 'refusals were still queued: the abandon stopped it');
      const { trail } = await stack.effects.status(effectId);
      assert.equal(trail.effect.stage, 'abandoned');
      assert.equal(trail.fact, null);
    },
  );

  test(
    'a deploy that changes how a package is built does not wedge an effect waiting in unknown: the stored release is sent',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'post:redeployed';
      // Lost before the provider stored it: readback proves absence, and a key-less post awaits a person.
      await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
      await stack.withWorker(async () => {
        await stack.effects.approve(postRequest(effectId, 'Launch, as approved'));
        await waitForStage(stack, effectId, 'unknown', 'a human decision');
      });
      // The new worker's social-feed adapter builds other bodies (a new field, the text rewritten).
      const redeployed = (settings: DestinationSettings) => {
        const real = createDestinations(settings);
        const social = real['social-feed'];
        assert.ok(social);
        const rebuilt: DestinationAdapter = {
          ...social,
          buildPackage: (id, operation, payload) => {
            const pkg = social.buildPackage(id, operation, payload);
            return { ...pkg, body: { ...pkg.body, text: `${String(payload.text)} (v2)`, utm: 'deploy-2' } };
          },
        };
        return { ...real, 'social-feed': rebuilt };
      };
      const result = await stack.withWorker(
        async () => {
          const answer = await stack.effects.decide(effectId, 'approve-retry', {
            actor: 'ops@example.com',
            reason: 'nothing on the dashboard',
          });
          assert.equal(answer.accepted, true);
          return resultOf(stack, effectId);
        },
        { adapters: redeployed },
      );
      assert.equal(result.stage, 'recorded');
      const posts = await socialPostsFor(stack, effectId);
      assert.equal(posts.length, 1, 'one post');
      assert.equal(posts[0]?.text, 'Launch, as approved', 'the approved text, not the new build');
      // The lost request and the retry: both carried the release's body (its hash), each after its attempt row.
      await assertProviderSaw(stack, effectId, { posts: 2 });
    },
  );
});
