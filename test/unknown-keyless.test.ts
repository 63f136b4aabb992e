// UNKNOWN on the key-less social destination: nothing at the provider dedupes, so no automatic retry
// ever follows UNKNOWN; readback scans the listing; humans decide through signals (as from the Web UI).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { eq } from 'drizzle-orm';
import {
  assertProviderSaw,
  liveStatus,
  resultOf,
  socialPostsFor,
  waitForStage,
  wakeWithStaleDecisions,
} from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { postRequest } from '../harness/sample-requests.js';
import { decisions, providerEvidence } from '../ledger/schema.js';
import { waitFor } from '../stack/wait-for.js';
import { abandonSignal, approveRetrySignal, confirmDeliverySignal } from '../workflows/contract.js';
import { effectStageKey } from '../workflows/search-attributes.js';
import { runCli } from './support/cli.js';
import { isolateEachTest, TEST_TIMEOUT } from './support/isolation.js';

/** Only for effects whose answer a test holds back; every other call gets the destination's own (seconds). */
const SHORT_CALL_TIMEOUT_MS = 2000;
/** Held answers wait until the test releases them (or the provider is reset after the test). */
const HOLD_MS = 600_000;

describe('UNKNOWN on a key-less destination', () => {
  let stack: Stack;
  let quick: Stack['effects'];
  before(async () => {
    // Readback re-runs every second while a human is awaited, so a late post is still found.
    stack = await startStack({ readbackIntervalMs: 1000 });
    quick = stack.effectsWith({ callTimeoutMs: SHORT_CALL_TIMEOUT_MS });
  });
  after(() => stack?.stop());
  isolateEachTest(() => stack);

  /** Someone else posts on the feed, carrying our effect ID but another body. Returns the post and the request's seq. */
  async function impostorPost(effectId: string, text: string) {
    const res = await fetch(`${stack.simulator.url}/social/v1/posts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ channel: 'linkedin-ru', text, metadata: { effect_id: effectId } }),
    });
    assert.equal(res.status, 200);
    const post = (await res.json()) as { id: string };
    const seq = (await stack.simulator.requests({ method: 'POST' })).find((r) => r.objectId === post.id)!.seq;
    return { id: post.id, seq };
  }

  const postsFor = (effectId: string) => socialPostsFor(stack, effectId);
  const decisionRows = (effectId: string) =>
    stack.ledger.db.select().from(decisions).where(eq(decisions.effectId, effectId));

  test(
    '3b. fail before commit → readback proves absence → waits for a human (no automatic retry) → approve-retry → recorded; garbage decisions are refused and recorded, poison text too (8)',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'post:launch-1';
      await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
      await stack.withWorker(async () => {
        await quick.approve(postRequest(effectId, 'We launched!'));
        const frozen = await waitForStage(stack, effectId, 'unknown', 'a human decision');
        assert.equal(frozen.attempts.length, 1);
        // Withheld while our request could still be processed, then proven absent.
        assert.equal(frozen.readbacks.at(-1)?.outcome, 'absent');

        // Operators find it: the ledger listing, the CLI and a Temporal list query.
        const listed = await runCli(stack, ['list', '--stage', 'unknown', '--json']);
        const rows = JSON.parse(listed.stdout) as Array<{
          effectId: string;
          lastAttemptAt: string;
          lastReason: string;
        }>;
        assert.equal(rows[0]?.effectId, effectId);
        assert.equal(new Date(rows[0]!.lastAttemptAt).toISOString(), frozen.attempts[0]!.startedAt);
        assert.match(rows[0]!.lastReason, /no matching post/);
        const found = await waitFor(async () => {
          const ids: string[] = [];
          for await (const w of stack.env.client.workflow.list({
            query: `EffectStage = "unknown" AND EffectDestination = "social-feed"`,
          }))
            ids.push(w.workflowId);
          return ids.includes(effectId) ? ids : undefined;
        }, 'the visibility query to show the effect');
        assert.deepEqual(found, [effectId]);

        // 8. Garbage from the UI: refused, recorded, nothing changes.
        const handle = stack.env.client.workflow.getHandle(effectId);
        await handle.signal(approveRetrySignal, { actor: 5, reason: 'x' });
        await handle.signal(approveRetrySignal, { actor: '   ', reason: 'x' });
        await handle.signal(approveRetrySignal, 'retry please');
        await handle.signal(confirmDeliverySignal, { actor: 'ops@example.com', reason: 'trust me' });
        await handle.signal(abandonSignal, { actor: 'ops@example.com', reason: 'x', force: true });
        await handle.signal('approve', { actor: 'ops@example.com', reason: 'typo in the signal name' });
        // Text the ledger cannot store: refused, and recorded storable (accepted, its write would fail forever).
        await handle.signal(approveRetrySignal, { actor: 'ops@example.com\u0000', reason: 'x\uD800' });
        await assert.rejects(
          stack.effects.decide(effectId, 'approve-retry', { actor: '', reason: 'x' }),
          WorkflowUpdateFailedError,
        );
        const refused = await waitFor(async () => {
          const rows = await decisionRows(effectId);
          return rows.length === 7 ? rows : undefined;
        }, 'seven refused decisions in the ledger');
        assert.ok(refused.every((d) => !d.accepted && d.rejectionReason));
        const poisoned = refused.find((d) => d.actor === 'ops@example.com\uFFFD');
        assert.match(poisoned?.rejectionReason ?? '', /actor contains a NUL/);
        assert.deepEqual(refused.map((d) => d.kind).sort(), [
          'abandon',
          'approve-retry',
          'approve-retry',
          'approve-retry',
          'approve-retry',
          'confirm-delivery',
          'unrecognised',
        ]);
        assert.equal((await liveStatus(stack, effectId)).stage, 'unknown');
        assert.equal((await postsFor(effectId)).length, 0, 'no post exists');
        await assertProviderSaw(stack, effectId, { posts: 1 }); // the lost one; nothing was sent meanwhile

        // A human approves the retry, with the same key.
        await handle.signal(approveRetrySignal, { actor: 'ops@example.com', reason: 'checked the provider dashboard' });
        const result = await resultOf(stack, effectId);
        assert.equal(result.stage, 'recorded');
      });
      assert.equal((await postsFor(effectId)).length, 1);
      const posts = await assertProviderSaw(stack, effectId, { posts: 2 });
      assert.deepEqual(
        posts.map((p) => p.fate),
        ['dropped', 'answered'],
      );
      const { trail } = await stack.effects.status(effectId);
      assert.equal(trail.attempts.length, 2);
      assert.ok(trail.attempts.every((a) => a.idempotencyKey === effectId));
      const accepted = trail.decisions.filter((d) => d.accepted);
      assert.deepEqual(
        accepted.map((d) => [d.kind, d.actor]),
        [['approve-retry', 'ops@example.com']],
      );
      assert.equal(trail.fact?.confirmedBy, 'provider_response');
    },
  );

  test(
    '7. readback inconclusive (the post fell out of the listing) → awaits a human → confirm with evidence → recorded by human; confirmations naming a missing, another or a look-alike object are refused',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'post:launch-2';
      const impostors: number[] = [];
      // Our answer is held; we give up after 8 s, and readback starts only then: seconds to crowd the feed.
      const patient = stack.effectsWith({ callTimeoutMs: 8000 });
      await stack.simulator.fault('delay_after_commit', { path: '/social/v1/posts', delayMs: HOLD_MS });
      await stack.withWorker(async () => {
        await patient.approve(postRequest(effectId, 'Second launch'));
        const [ours] = await waitFor(async () => {
          const p = await postsFor(effectId);
          return p.length ? p : undefined;
        }, 'our post to exist at the provider');
        // Others post 100 times (one control call) while our answer is held: ours is no longer among the listed newest 100.
        await stack.simulator.crowdSocialFeed(100);
        assert.equal((await liveStatus(stack, effectId)).readbacks.length, 0, 'crowded before the first readback');
        const frozen = await waitForStage(stack, effectId, 'unknown', 'a human decision');
        assert.equal(frozen.readbacks.at(-1)?.outcome, 'inconclusive');
        assert.equal(frozen.readbacks.at(-1)?.coverage, 'partial');

        // The listing reports each effect's own latest attempt, even after other effects made later ones.
        await stack.effects.approve(postRequest('post:other', 'Another post'));
        await stack.effects.result('post:other');
        const [listed] = (await stack.effects.listByStage('unknown')).filter((r) => r.effectId === effectId);
        assert.equal(listed?.lastAttemptAt?.toISOString(), frozen.attempts[0]!.startedAt);
        assert.match(listed?.lastReason ?? '', /does not reach back/);

        // Evidence that contradicts the destination is refused.
        const wrong = await stack.effects.decide(effectId, 'confirm-delivery', {
          actor: 'ops@example.com',
          reason: 'I saw it',
          externalId: 'post_doesnotexist',
        });
        assert.equal(wrong.accepted, false);
        assert.match(wrong.reason ?? '', /no object post_doesnotexist/);
        assert.equal(wrong.stage, 'unknown');

        // A real object that is not this effect's: another effect's post, and a look-alike carrying our
        // effect ID with another body (someone else's post, or an edit). Both refused.
        const [others] = await postsFor('post:other');
        const lookAlike = await impostorPost(effectId, 'Second launch (edited)');
        impostors.push(lookAlike.seq);
        for (const externalId of [others!.id, lookAlike.id]) {
          const refused = await stack.effects.decide(effectId, 'confirm-delivery', {
            actor: 'ops@example.com',
            reason: 'this one?',
            externalId,
          });
          assert.equal(refused.accepted, false, `confirming ${externalId}`);
          assert.match(refused.reason ?? '', /does not carry this effect's reference and released body/);
          assert.equal(refused.stage, 'unknown');
        }

        const right = await stack.effects.decide(effectId, 'confirm-delivery', {
          actor: 'ops@example.com',
          reason: 'found it on the page',
          externalId: ours!.id,
        });
        assert.deepEqual(right, { accepted: true, stage: 'recorded' });
      });
      const [post] = await assertProviderSaw(stack, effectId, { posts: 1, ignore: impostors });
      const { trail } = await stack.effects.status(effectId);
      assert.equal(trail.effect.stage, 'recorded');
      assert.equal(trail.attempts.length, 1);
      assert.equal(trail.fact?.confirmedBy, 'human');
      assert.equal(trail.fact?.externalId, post!.objectId);
      assert.deepEqual(
        trail.decisions.map((d) => [d.kind, d.accepted]),
        [
          ['confirm-delivery', false],
          ['confirm-delivery', false],
          ['confirm-delivery', false],
          ['confirm-delivery', true],
        ],
      );
    },
  );

  test(
    'a retry over an inconclusive look is refused: nothing dedupes a second post, so only a look proving absence lets one leave (chaos seed 2026120402)',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'post:launch-2b';
      const patient = stack.effectsWith({ callTimeoutMs: 8000 });
      await stack.simulator.fault('delay_after_commit', { path: '/social/v1/posts', delayMs: HOLD_MS });
      await stack.withWorker(async () => {
        await patient.approve(postRequest(effectId, 'Launch, once'));
        await waitFor(async () => ((await postsFor(effectId)).length ? true : undefined), 'our post at the provider');
        // Ours falls out of the listed newest 100 before the first look: every look is inconclusive.
        await stack.simulator.crowdSocialFeed(100);
        const frozen = await waitForStage(stack, effectId, 'unknown', 'a human decision');
        assert.equal(frozen.readbacks.at(-1)?.outcome, 'inconclusive');

        const answer = await stack.effects.decide(effectId, 'approve-retry', {
          actor: 'ops@example.com',
          reason: 'the dashboard shows nothing',
        });
        // Accepted on the condition a person is told; the look after the in-flight window cannot prove absence.
        assert.equal(answer.accepted, true);
        assert.match(answer.reason ?? '', /honours no idempotency key: the retry leaves only once a look/);
        const refusal = await waitFor(async () => {
          const rows = await decisionRows(effectId);
          return rows.length === 2 ? rows.find((d) => !d.accepted) : undefined;
        }, 'the retry refused after its look');
        assert.match(
          refusal!.rejectionReason ?? '',
          /the approved retry did not leave: this destination honours no idempotency key/,
        );
        assert.match(refusal!.rejectionReason ?? '', /the last look was inconclusive/);
        assert.equal((await waitForStage(stack, effectId, 'unknown', 'a human decision')).attempts.length, 1);
        const [ours] = await postsFor(effectId);
        const confirmed = await stack.effects.decide(effectId, 'confirm-delivery', {
          actor: 'ops@example.com',
          reason: 'found it on the page',
          externalId: ours!.id,
        });
        assert.deepEqual(confirmed, { accepted: true, stage: 'recorded' });
      });
      await assertProviderSaw(stack, effectId, { posts: 1 });
      const { trail } = await stack.effects.status(effectId);
      assert.equal(trail.attempts.length, 1);
      assert.deepEqual(
        trail.decisions.map((d) => [d.kind, d.accepted]),
        [
          ['approve-retry', true],
          ['approve-retry', false],
          ['confirm-delivery', true],
        ],
      );
    },
  );

  test(
    'an abandon over a look that could not tell is refused until the person says they checked the destination (chaos seed 2026120603)',
    TEST_TIMEOUT,
    async () => {
      const landed = 'post:launch-2c';
      const lost = 'post:launch-2d';
      const patient = stack.effectsWith({ callTimeoutMs: 8000 });
      await stack.withWorker(async () => {
        // One post held and landed, one that never left; both crowded out of the newest 100 before their first look.
        await stack.simulator.fault('delay_after_commit', { path: '/social/v1/posts', delayMs: HOLD_MS });
        await patient.approve(postRequest(landed, 'Launch, held'));
        await waitFor(
          async () => ((await postsFor(landed)).length ? true : undefined),
          'the held post at the provider',
        );
        await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
        await patient.approve(postRequest(lost, 'Launch, lost'));
        await stack.simulator.crowdSocialFeed(100);
        for (const effectId of [landed, lost]) {
          const frozen = await waitForStage(stack, effectId, 'unknown', 'a human decision');
          assert.equal(frozen.readbacks.at(-1)?.outcome, 'inconclusive');
          const answer = await stack.effects.decide(effectId, 'abandon', {
            actor: 'ops@example.com',
            reason: 'looks stuck',
          });
          assert.equal(answer.accepted, false, `${effectId}: abandoned beside what the look could not see`);
          assert.match(answer.reason ?? '', /not abandoned: the last look was inconclusive .*"checkedAbsent": true/);
          assert.equal((await waitForStage(stack, effectId, 'unknown', 'a human decision')).stage, 'unknown');
        }
        // The person looks at the feed: the held post is there (confirmed), the lost one is not (abandoned).
        const [ours] = await postsFor(landed);
        assert.deepEqual(
          await stack.effects.decide(landed, 'confirm-delivery', {
            actor: 'ops@example.com',
            reason: 'found it on the page',
            externalId: ours!.id,
          }),
          { accepted: true, stage: 'recorded' },
        );
        assert.deepEqual(
          await stack.effects.decide(lost, 'abandon', {
            actor: 'ops@example.com',
            reason: 'not on the feed',
            checkedAbsent: true,
          }),
          { accepted: true, stage: 'abandoned' },
        );
      });
      await assertProviderSaw(stack, landed, { posts: 1 });
      assert.equal((await postsFor(lost)).length, 0);
      for (const [effectId, stage, last] of [
        [landed, 'recorded', 'confirm-delivery'],
        [lost, 'abandoned', 'abandon'],
      ] as const) {
        const { trail } = await stack.effects.status(effectId);
        assert.equal(trail.effect.stage, stage);
        assert.deepEqual(
          trail.decisions.map((d) => [d.kind, d.accepted]),
          [
            ['abandon', false],
            [last, true],
          ],
        );
      }
      const { trail } = await stack.effects.status(lost);
      const said = trail.decisions.at(-1)?.payload as { value?: { checkedAbsent?: boolean } } | undefined;
      assert.equal(said?.value?.checkedAbsent, true, 'the ledger keeps the person’s word that the post is not there');
    },
  );

  test('abandon: a human gives up; nothing more is sent', TEST_TIMEOUT, async () => {
    const effectId = 'post:launch-3';
    await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
    const result = await stack.withWorker(async () => {
      await stack.effects.approve(postRequest(effectId, 'Third launch'));
      await waitForStage(stack, effectId, 'unknown', 'a human decision');
      await stack.env.client.workflow
        .getHandle(effectId)
        .signal(abandonSignal, { actor: 'ops@example.com', reason: 'campaign cancelled' });
      return resultOf(stack, effectId);
    });
    assert.equal(result.stage, 'abandoned');
    assert.equal((await postsFor(effectId)).length, 0);
    await assertProviderSaw(stack, effectId, { posts: 1 });
    const { trail } = await stack.effects.status(effectId);
    assert.equal(trail.effect.stage, 'abandoned');
    assert.equal(trail.fact, null);
    assert.deepEqual(
      trail.decisions.map((d) => [d.kind, d.actor, d.reason]),
      [['abandon', 'ops@example.com', 'campaign cancelled']],
    );
  });

  test(
    'a post that appears late is found by the scheduled readback, with no human and no second POST',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'post:launch-4';
      // The provider holds the request past our timeout, and commits it only when the test says so.
      await stack.simulator.fault('delay_before_commit', { path: '/social/v1/posts', delayMs: HOLD_MS });
      const result = await stack.withWorker(async () => {
        await quick.approve(postRequest(effectId, 'Fourth launch'));
        const frozen = await waitForStage(stack, effectId, 'unknown', 'a human decision');
        // Nothing found (withheld as inconclusive while the request might still be in flight, then absent).
        assert.equal(frozen.readbacks.at(-1)?.outcome, 'absent');
        assert.equal(await stack.simulator.releaseDelays(), 1, 'the provider commits the post now');
        return resultOf(stack, effectId);
      });
      assert.equal(result.stage, 'recorded');
      assert.equal((await postsFor(effectId)).length, 1);
      const [post] = await assertProviderSaw(stack, effectId, { posts: 1 });
      assert.deepEqual([post!.fate, post!.status], ['client_gone', 200]);
      const { trail } = await stack.effects.status(effectId);
      assert.equal(trail.attempts.length, 1);
      assert.equal(trail.fact?.confirmedBy, 'readback');
      assert.equal(trail.decisions.length, 0);
    },
  );

  test(
    'confirm with only a URL: resolved to the provider’s object and checked like an ID; the canonical URL is recorded; a URL that names nothing is refused',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'post:launch-5';
      // Stored, its answer held: then pushed out of the listing's reach, so only a human can confirm it.
      await stack.simulator.fault('delay_after_commit', { path: '/social/v1/posts', delayMs: HOLD_MS });
      const answers = await stack.withWorker(async () => {
        await quick.approve(postRequest(effectId, 'Fifth launch'));
        const [ours] = await waitFor(async () => {
          const p = await postsFor(effectId);
          return p.length ? p : undefined;
        }, 'our post to exist at the provider');
        await stack.simulator.crowdSocialFeed(100);
        await waitForStage(stack, effectId, 'unknown', 'a human decision');
        const confirm = (externalUrl: string) =>
          stack.effects.decide(effectId, 'confirm-delivery', {
            actor: 'ops@example.com',
            reason: 'found it on the page',
            externalUrl,
          });
        const elsewhere = await confirm(`https://social.example/linkedin-ru/posts/${'p'.repeat(300)}`);
        const nothing = await confirm(`${stack.simulator.url}/social/v1/posts/post_doesnotexist`);
        const right = await confirm(`${stack.simulator.url}/social/v1/posts/${ours!.id}/?utm_source=chat#top`);
        return { ours: ours!, elsewhere, nothing, right };
      });
      assert.equal(answers.elsewhere.accepted, false);
      assert.match(answers.elsewhere.reason ?? '', /does not name a social-feed object .*\/social\/v1\/posts\/<id>/);
      assert.equal(answers.nothing.accepted, false);
      assert.match(answers.nothing.reason ?? '', /no object post_doesnotexist/);
      assert.deepEqual(answers.right, { accepted: true, stage: 'recorded' });
      await assertProviderSaw(stack, effectId, { posts: 1 });
      const { trail } = await stack.effects.status(effectId);
      assert.equal(trail.fact?.confirmedBy, 'human');
      assert.equal(trail.fact?.externalId, answers.ours.id);
      assert.equal(trail.fact?.externalUrl, `${stack.simulator.url}/social/v1/posts/${answers.ours.id}`, 'canonical');
      const human = trail.evidence.find((e) => e.kind === 'human');
      assert.match(String((human?.detail as { checked?: string } | undefined)?.checked), /exists and matches/);
      assert.deepEqual(
        trail.decisions.map((d) => [d.kind, d.accepted]),
        [
          ['confirm-delivery', false],
          ['confirm-delivery', false],
          ['confirm-delivery', true],
        ],
      );
    },
  );

  test(
    'a long wait for a human continues as new: same effect ID, attempts and decisions carried, the decision lands in the latest run',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'post:launch-6';
      // Two wakes per run (a person's stale decisions here): a wait of weeks in miniature. Its looks, every 300 ms,
      // wake nothing.
      const patient = stack.effectsWith({ readbackIntervalMs: 300, readbacksPerRun: 2 });
      await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
      const answer = await stack.withWorker(async () => {
        await patient.approve(postRequest(effectId, 'Sixth launch'));
        const { runId: firstRunId } = await stack.env.client.workflow.getHandle(effectId).describe();
        await stack.env.client.workflow
          .getHandle(effectId)
          .signal(abandonSignal, { actor: 'ops@example.com', reason: 'x', force: true });
        // Two hand-overs later, the latest run still knows the attempt and the refused decisions of the first.
        const runs = new Set([firstRunId]);
        let third: Awaited<ReturnType<ReturnType<typeof stack.env.client.workflow.getHandle>['describe']>> | undefined;
        while (runs.size < 3) {
          await waitForStage(stack, effectId, 'unknown', 'a human decision');
          await wakeWithStaleDecisions(stack, effectId, 2);
          third = await waitFor(async () => {
            const d = await stack.env.client.workflow.getHandle(effectId).describe();
            return runs.has(d.runId) ? undefined : d;
          }, 'the run to hand over');
          runs.add(third.runId);
        }
        assert.ok(third);
        await waitFor(async () => {
          const readbacks = (
            await stack.ledger.db.select().from(providerEvidence).where(eq(providerEvidence.effectId, effectId))
          ).filter((e) => e.kind === 'readback');
          return readbacks.length >= 5;
        }, 'five looks over three runs');
        assert.equal(third.status.name, 'RUNNING');
        assert.equal(third.typedSearchAttributes.get(effectStageKey), 'unknown', 'the UI still finds it by stage');
        const first = await stack.env.client.workflow.getHandle(effectId, firstRunId).describe();
        assert.equal(first.status.name, 'CONTINUED_AS_NEW');
        const live = await liveStatus(stack, effectId);
        assert.equal(live.stage, 'unknown');
        assert.deepEqual(
          live.attempts.map((a) => [a.attemptNumber, a.outcome]),
          [[1, 'unknown']],
        );
        assert.equal(
          live.decisions.filter((d) => d.note.includes('force')).length,
          1,
          'the refused garbage is carried',
        );
        assert.equal(live.decisions.filter((d) => d.note.startsWith('stale')).length, 4, 'so are the stale ones');
        return stack.effects.decide(effectId, 'abandon', {
          actor: 'ops@example.com',
          reason: 'nobody could confirm it',
        });
      });
      assert.deepEqual(answer, { accepted: true, stage: 'abandoned' });
      assert.equal((await resultOf(stack, effectId)).stage, 'abandoned');
      assert.equal((await postsFor(effectId)).length, 0);
      await assertProviderSaw(stack, effectId, { posts: 1 });
      const { trail } = await stack.effects.status(effectId);
      assert.equal(trail.effect.stage, 'abandoned');
      assert.equal(trail.attempts.length, 1, 'no run made a second attempt');
      assert.deepEqual(
        trail.decisions.map((d) => [d.kind, d.accepted]),
        [
          ['abandon', false], // the forced one, refused
          ...Array.from({ length: 4 }, () => ['abandon', false]), // the stale ones
          ['abandon', true],
        ],
      );
    },
  );

  test(
    'decisions are refused outside unknown: a signal is recorded as refused, the update is rejected; nothing changes',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'post:launch-7';
      // A generous call timeout: the effect stays `attempted` while its answer is held, until released.
      const patient = stack.effectsWith({ callTimeoutMs: 120_000 });
      await stack.simulator.fault('delay_after_commit', { path: '/social/v1/posts', delayMs: HOLD_MS });
      await stack.withWorker(async () => {
        await patient.approve(postRequest(effectId, 'Seventh launch'));
        await waitForStage(stack, effectId, 'attempted');
        await waitFor(async () => (await stack.simulator.requests({ method: 'POST' })).length === 1, 'the POST');
        await stack.env.client.workflow
          .getHandle(effectId)
          .signal(approveRetrySignal, { actor: 'ops@example.com', reason: 'impatient' });
        const [refused] = await waitFor(async () => {
          const rows = await decisionRows(effectId);
          return rows.length === 1 ? rows : undefined;
        }, 'the refused signal in the ledger');
        assert.equal(refused!.accepted, false);
        assert.match(refused!.rejectionReason ?? '', /not awaiting a decision: the effect is attempted/);
        await assert.rejects(
          stack.effects.decide(effectId, 'abandon', { actor: 'ops@example.com', reason: 'impatient' }),
          (error) => {
            assert.ok(error instanceof WorkflowUpdateFailedError);
            assert.match(String(error.cause?.message), /not awaiting a decision: the effect is attempted/);
            return true;
          },
        );
        assert.equal((await liveStatus(stack, effectId)).stage, 'attempted');
        assert.equal(await stack.simulator.releaseDelays(), 1);
        assert.equal((await resultOf(stack, effectId)).stage, 'recorded');
      });
      await assertProviderSaw(stack, effectId, { posts: 1 });
      const { trail } = await stack.effects.status(effectId);
      assert.equal(trail.fact?.confirmedBy, 'provider_response');
      assert.deepEqual(
        trail.decisions.map((d) => [d.kind, d.accepted]),
        [['approve-retry', false]],
      );
    },
  );

  test(
    'the CLI decides: a refused confirmation exits 5, a bad decision name exits 2, approve-retry is accepted → recorded',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'post:launch-8';
      await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
      await stack.withWorker(async () => {
        await stack.effects.approve(postRequest(effectId, 'Eighth launch'));
        await waitForStage(stack, effectId, 'unknown', 'a human decision');
        const who = ['--actor', 'ops@example.com', '--reason', 'checked'];
        const refused = await runCli(stack, [
          'decide',
          effectId,
          'confirm',
          ...who,
          '--external-id',
          'post_nope',
          '--json',
        ]);
        assert.equal(refused.code, 5, refused.stderr);
        assert.equal((JSON.parse(refused.stdout) as { accepted: boolean }).accepted, false);
        const typo = await runCli(stack, ['decide', effectId, 'approve', ...who]);
        assert.equal(typo.code, 2, typo.stderr);
        const accepted = await runCli(stack, ['decide', effectId, 'approve-retry', ...who, '--json']);
        assert.equal(accepted.code, 0, accepted.stderr);
        assert.deepEqual(JSON.parse(accepted.stdout), {
          accepted: true,
          stage: 'unknown',
          reason:
            'this destination honours no idempotency key: the retry leaves only once a look after our last request could no longer be in flight proves absence; otherwise it is refused and the effect waits on',
        });
        assert.equal((await resultOf(stack, effectId)).stage, 'recorded');
      });
      await assertProviderSaw(stack, effectId, { posts: 2 });
      const { trail } = await stack.effects.status(effectId);
      assert.deepEqual(
        trail.decisions.map((d) => [d.kind, d.actor, d.accepted]),
        [
          ['confirm-delivery', 'ops@example.com', false],
          ['approve-retry', 'ops@example.com', true],
        ],
      );
    },
  );
});
