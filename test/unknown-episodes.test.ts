// What issue 10 found outside the test plan, each made impossible: a prompt human retry on a key-less
// destination while our request may still be processed; a decision applied to a later UNKNOWN episode than
// the one it answered; a decision re-sent after a client timeout counting twice; an effect the provider
// keeps refusing that nobody can stop.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createDestinations, type DestinationSettings } from '../activities/destinations/registry.js';
import type { DestinationAdapter } from '../domain/destination-contract.js';
import { idempotencyKeyFor } from '../domain/idempotency-key.js';
import {
  assertProviderSaw,
  liveStatus,
  objectsFor,
  resultOf,
  socialPostsFor,
  waitForStage,
} from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { postRequest, refundRequest, taskAnnouncedRequest } from '../harness/sample-requests.js';
import { temporalTarget } from '../harness/temporal-target.js';
import { readTrail } from '../ledger/trail.js';
import { waitFor } from '../stack/wait-for.js';
import { abandonSignal, approveRetrySignal, confirmDeliverySignal, type EffectStatus } from '../workflows/contract.js';
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

  test(
    'two operators, a retry then an abandon; the retried attempt goes UNKNOWN again: the abandon was refused when its episode ended, before the retry left, and never applied to the next episode',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'post:stale-again';
      const quick = stack.effectsWith({ callTimeoutMs: 2000 });
      // Both the first request and the retry are lost before the feed stores them.
      await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts', count: 2 });
      await stack.withWorker(async () => {
        await quick.approve(postRequest(effectId, 'Stale, twice'));
        await waitForStage(stack, effectId, 'unknown', 'a human decision');
        const handle = stack.env.client.workflow.getHandle(effectId);
        await handle.signal(approveRetrySignal, { actor: 'ana@example.com', reason: 'retry it' });
        const late = await quick.decide(effectId, 'abandon', { actor: 'bob@example.com', reason: 'drop it' });
        assert.equal(late.accepted, false, 'the abandon answered the episode the retry ended');
        assert.match(late.reason ?? '', /stale/);
        // The retry went UNKNOWN again: a new episode, which waits for a person and is not abandoned by the old one.
        const again = await waitFor(async () => {
          const s = await liveStatus(stack, effectId);
          return s.attempts.length === 2 && s.awaiting?.includes('a human decision') ? s : undefined;
        }, 'the retry to be lost too and a person awaited again');
        assert.equal(again.stage, 'unknown');
        const { trail } = await stack.effects.status(effectId);
        const abandon = trail.decisions.find((d) => d.kind === 'abandon');
        const retry = trail.attempts.find((a) => a.attemptNumber === 2);
        assert.ok(abandon && retry);
        assert.equal(abandon.accepted, false);
        assert.ok(
          abandon.decidedAt.getTime() <= retry.startedAt.getTime(),
          `the stale abandon was answered (${abandon.decidedAt.toISOString()}) before the retry left (${retry.startedAt.toISOString()})`,
        );
        await quick.decide(effectId, 'abandon', { actor: 'bob@example.com', reason: 'drop it, for this episode' });
        assert.equal((await resultOf(stack, effectId)).stage, 'abandoned');
      });
      await assertProviderSaw(stack, effectId, { posts: 2 });
    },
  );

  test(
    'a decision outlives its step: step main confirmed by one operator, a retry from another is refused as stale, never applied to step announce; a decision names its step',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'steps:stale-decision';
      // No readback on a schedule while the operators look: only their decisions move the effect.
      const patient = stack.effectsWith({
        callTimeoutMs: 2000,
        readbackIntervalMs: 600_000,
        readbackMaxIntervalMs: 600_000,
      });
      // The task's request is held at the provider past our timeout (its key in flight: a person must look);
      // the announcement is lost before the feed stores it.
      await stack.simulator.fault('delay_before_commit', { path: '/v1/objects', delayMs: HOLD_MS });
      await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
      await stack.withWorker(async () => {
        await patient.approve(taskAnnouncedRequest(effectId, 'request-51'));
        const onMain = await waitForStage(stack, effectId, 'unknown', 'a human decision');
        assert.equal(onMain.step, 'main');
        // What a decision answers, as the status (and the UI's Current Details) shows it to type.
        assert.deepEqual(onMain.decideOn, { step: 'main', revision: 1, attempt: 1 });
        assert.equal(await stack.simulator.releaseDelays(), 1, 'the task commits now');
        const [task] = await waitFor(async () => {
          const found = await objectsFor(stack, effectId);
          return found.length ? found : undefined;
        }, 'the task to exist at the provider');
        const handle = stack.env.client.workflow.getHandle(effectId);
        // Operator A found the task; operator B, looking at the same page a moment later, asks for a retry.
        await handle.signal(confirmDeliverySignal, {
          actor: 'ana@example.com',
          reason: 'task is there',
          externalId: task!.id,
        });
        await handle.signal(approveRetrySignal, { actor: 'bob@example.com', reason: 'nothing there, retry' });
        const settled = await waitFor(async () => {
          if ((await handle.describe()).status.name !== 'RUNNING') return { closed: await handle.result() };
          const s: EffectStatus = await liveStatus(stack, effectId);
          return s.step === 'announce' && s.awaiting?.includes('a human decision') ? { live: s } : undefined;
        }, 'step announce to wait for a person (or the effect to close)');
        if (!settled.live)
          assert.fail(`the effect went on without anyone deciding on step announce: ${JSON.stringify(settled.closed)}`);
        const announce = settled.live;
        assert.equal(announce.stage, 'unknown');
        assert.equal(announce.attempts.filter((a) => a.step === 'announce').length, 1, 'announce was not retried');
        const { trail } = await stack.effects.status(effectId);
        const retry = trail.decisions.find((d) => d.kind === 'approve-retry');
        assert.equal(retry?.accepted, false, 'the retry answered step main');
        assert.match(retry?.rejectionReason ?? '', /stale: .*step main/);
        const announced = trail.attempts.find((a) => a.step === 'announce');
        assert.ok(retry && announced);
        assert.ok(
          retry.decidedAt.getTime() <= announced.startedAt.getTime(),
          `the stale retry was answered when step main settled (${retry.decidedAt.toISOString()}), before step announce went (${announced.startedAt.toISOString()})`,
        );
        // A decision that names the step it answers: main is settled; announce is the one waited on.
        const onOldStep = await patient.decide(effectId, 'approve-retry', {
          actor: 'bob@example.com',
          reason: 'retry main',
          step: 'main',
        });
        assert.equal(onOldStep.accepted, false);
        assert.match(onOldStep.reason ?? '', /stale: it answers step main; the effect is on step announce/);
        // Attempt 1 of which step? On a multi-step effect an attempt number alone is ambiguous.
        const ambiguous = await patient.decide(effectId, 'abandon', {
          actor: 'bob@example.com',
          reason: 'x',
          attempt: 1,
        });
        assert.equal(ambiguous.accepted, false);
        assert.match(ambiguous.reason ?? '', /name the step too/);
        const decided = await patient.decide(effectId, 'approve-retry', {
          actor: 'ana@example.com',
          reason: 'no post on the channel',
          step: 'announce',
          attempt: 1,
        });
        assert.equal(decided.accepted, true);
        assert.equal((await resultOf(stack, effectId)).stage, 'recorded');
      });
      await assertProviderSaw(stack, effectId, { posts: 1, step: 'main' });
      await assertProviderSaw(stack, effectId, { posts: 2, step: 'announce' });
      assert.equal((await socialPostsFor(stack, idempotencyKeyFor(effectId, 'announce'))).length, 1);
      const trail = await readTrail(stack.ledger.db, effectId);
      assert.deepEqual(
        trail?.facts.map((f) => [f.step, f.confirmedBy]),
        [
          ['main', 'human'],
          ['announce', 'provider_response'],
        ],
      );
    },
  );

  test(
    'a decide re-sent with the same decision ID after the run continued as new counts once',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'post:once-across-runs';
      const handsOver = stack.effectsWith({ callTimeoutMs: 2000, readbackIntervalMs: 3000, readbacksPerRun: 2 });
      await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts', count: 2 });
      await stack.withWorker(async () => {
        await handsOver.approve(postRequest(effectId, 'One decision, two runs'));
        await waitForStage(stack, effectId, 'unknown', 'a human decision');
        const { runId: firstRun } = await stack.env.client.workflow.getHandle(effectId).describe();
        const payload = { actor: 'ops@example.com', reason: 'nothing on the channel' };
        assert.equal((await handsOver.decide(effectId, 'approve-retry', payload, 'ticket-77')).accepted, true);
        // The retry is lost too; the run reads back twice and continues as new while a person is awaited.
        await waitFor(
          async () =>
            (await stack.env.client.workflow.getHandle(effectId, firstRun).describe()).status.name ===
            'CONTINUED_AS_NEW',
          'the first run to continue as new',
        );
        const next = await waitForStage(stack, effectId, 'unknown', 'a human decision');
        assert.equal(next.attempts.length, 2);
        // The caller's first try timed out on its side; it sends the same decision again, to the new run.
        const again = await handsOver.decide(effectId, 'approve-retry', payload, 'ticket-77');
        assert.match(again.reason ?? '', /already/);
        const after = await liveStatus(stack, effectId);
        assert.equal(after.attempts.length, 2, 'no third attempt: the decision was taken once');
        assert.equal(after.stage, 'unknown');
        await handsOver.decide(effectId, 'abandon', { actor: 'ops@example.com', reason: 'enough' });
        assert.equal((await resultOf(stack, effectId)).stage, 'abandoned');
      });
      await assertProviderSaw(stack, effectId, { posts: 2 });
      const { trail } = await stack.effects.status(effectId);
      assert.deepEqual(
        trail.decisions.filter((d) => d.requestRef === 'update:ticket-77').map((d) => [d.kind, d.accepted]),
        [['approve-retry', true]],
      );
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

describe('a "not sent" pause carried across continue-as-new', () => {
  let stack: Stack | undefined;
  before(async () => {
    // A server that suggests continue-as-new after a few events, as it does after thousands in production.
    if (temporalTarget() === 'dev-server')
      stack = await startStack({
        purpose: 'pauses',
        devServerArgs: ['--dynamic-config-value', 'limit.historyCount.suggestContinueAsNew=20'],
      });
  });
  after(() => stack?.stop());
  isolateEachTest(() => stack);

  test(
    'a provider that keeps answering 429: the run continues as new during a pause and the next run sends again with the same key; never UNKNOWN, never read back',
    TEST_TIMEOUT,
    async (t) => {
      if (!stack) return t.skip('the cluster target reads its dynamic config from harness/cluster/dynamic-config.yaml');
      const on = stack;
      const effectId = 'refund:rate-limited-long';
      await on.simulator.fault('status_429_before_commit', { path: '/v1/objects', count: 6 });
      await on.withWorker(async () => {
        await on.effects.approve(refundRequest(effectId, 1300));
        const { runId: firstRun } = await on.env.client.workflow.getHandle(effectId).describe();
        await waitFor(
          async () =>
            (await on.env.client.workflow.getHandle(effectId, firstRun).describe()).status.name === 'CONTINUED_AS_NEW',
          'the run to continue as new while the provider refuses',
        );
        assert.equal((await resultOf(on, effectId)).stage, 'recorded');
      });
      const { trail } = await on.effects.status(effectId);
      assert.deepEqual(
        trail.evidence.filter((e) => e.kind !== 'response').map((e) => [e.kind, e.outcome]),
        [],
        'nothing was read back: a refusal before the provider took the request leaves nothing to look for',
      );
      assert.deepEqual(
        trail.evidence.map((e) => e.outcome),
        [...Array(6).fill('not_sent'), 'confirmed'],
      );
      await assertProviderSaw(on, effectId, { posts: 7 });
    },
  );
});
