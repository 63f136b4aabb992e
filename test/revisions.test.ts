// Revisions of a refused effect: a person submits a new payload under the same effect ID; it becomes release
// revision 2, sent by a new run of the same workflow ID, under the key its destination's scope gives it. Judged
// from the provider's objects and request log, the ledger's rows and the workflow's stage. The database, not the
// client, decides every refusal that matters: a revision of an effect that is not rejected, a concurrent second
// revision, a move out of `rejected` without a revision.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { defaultPayloadConverter } from '@temporalio/common';
import {
  assertProviderSaw,
  liveStatus,
  objectsFor,
  resultOf,
  socialPostsFor,
  waitForStage,
} from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { postRequest, refundRequest } from '../harness/sample-requests.js';
import { RevisionRefusedError } from '../ledger/errors.js';
import { canonicalJson, sha256Hex } from '../ledger/fingerprint.js';
import { readRevisions } from '../ledger/revision.js';
import { readEffect, readTrail } from '../ledger/trail.js';
import { arriveAtBarrier, startBarrier } from '../stack/barrier.js';
import { startToxiproxy, type ToxiproxyServer } from '../stack/toxiproxy.js';
import { waitFor } from '../stack/wait-for.js';
import { EFFECT_WORKFLOW_TYPE, type EffectInput } from '../workflows/contract.js';
import { runCli } from './support/cli.js';
import { isolateEachTest, leftOpenOnPurpose, TEST_TIMEOUT } from './support/isolation.js';

const OPS = { approvedBy: 'ops@example.com', authorizationRef: 'REFUND-POLICY-7', reason: 'the amount was mistyped' };
const refund = (amount: number, charge = 'ch_1001') => ({ charge, amount, currency: 'EUR' });
/** Held answers wait until the test releases them (or the provider is reset after the test). */
const HOLD_MS = 600_000;

describe('revisions of a refused effect', () => {
  let stack: Stack;
  let effects: Stack['effects'];
  let toxiproxy: ToxiproxyServer;
  /** The worker's own way to Temporal: a proxy that can hold what the worker says until the test lets it go. */
  let temporalLink: Awaited<ReturnType<ToxiproxyServer['proxy']>>;
  before(async () => {
    // Each assigned as it starts: after() stops whatever did, even when the other failed.
    await Promise.all([startStack().then((s) => (stack = s)), startToxiproxy().then((t) => (toxiproxy = t))]);
    effects = stack.effectsWith({ absenceGraceMs: 0 });
    temporalLink = await toxiproxy.proxy('temporal', stack.env.address);
  });
  after(() => Promise.allSettled([stack?.stop(), toxiproxy?.stop()]));
  isolateEachTest(() => stack);

  /** Holds what the worker sends to Temporal (activity answers, workflow task answers) until heal(). */
  const partition = () =>
    temporalLink.proxy.addToxic({
      name: 'worker-to-temporal-held',
      type: 'latency',
      stream: 'upstream',
      toxicity: 1,
      // Far longer than any test: removing the toxic lets every held byte through at once.
      attributes: { latency: HOLD_MS, jitter: 0 },
    });
  const heal = () => toxiproxy.client.reset();

  /**
   * A refund the keyed API refuses (HTTP 400), whose run is still open when the ledger already says
   * `rejected`: the worker recorded the refusal, but its answer to Temporal is held (a network partition
   * between the worker and Temporal). Then two operators revise it at once, released by a barrier, as the
   * rejected run is closing. `answerLost`: the partition outlasts the send activity's timeout, so the run
   * never hears the answer the ledger holds (the chaos seed 913370001 path). Returns the workflow's result
   * (followed through continue-as-new), or the live view when it did not close in time.
   */
  async function revisedWhileClosing(id: string, answerLost: boolean, revise = true) {
    const closing = stack.effectsWith({ absenceGraceMs: 0, callTimeoutMs: 3000 });
    // The provider refuses at once (the amount is validated first) and holds its answer until the test lets it go.
    await stack.simulator.fault('delay_after_commit', { path: '/v1/objects', delayMs: HOLD_MS });
    return stack.withWorker(
      async () => {
        await closing.approve(refundRequest(id, -40));
        await waitFor(
          async () => (await stack.simulator.requests({ method: 'POST' })).some((r) => r.fate === 'pending'),
          'the refund to be held at the provider',
        );
        await partition();
        try {
          assert.equal(await stack.simulator.releaseDelays(), 1, 'the provider answers 400 now');
          await waitFor(
            async () => (await readEffect(stack.ledger.db, id))?.stage === 'rejected',
            'the ledger to record the refusal',
          );
          const handle = stack.env.client.workflow.getHandle(id);
          assert.equal((await handle.describe()).status.name, 'RUNNING', 'the rejected run is still open');
          if (revise) {
            const barrier = await startBarrier(2);
            const revised = await Promise.all(
              [0, 1].map(async () => {
                await arriveAtBarrier(barrier.address);
                return closing.revise(id, { payload: refund(4000), ...OPS });
              }),
            ).finally(() => barrier.close());
            assert.deepEqual(revised.map((r) => [r.revision, r.created]).sort(), [
              [2, false],
              [2, true],
            ]);
          }
          if (answerLost)
            await waitFor(
              async () =>
                ((await handle.fetchHistory()).events ?? []).some((e) => e.activityTaskTimedOutEventAttributes),
              'the send activity to time out at Temporal',
            );
        } finally {
          await heal();
        }
        return resultOf(stack, id, 60_000).catch(async (error: unknown) => {
          const live = await liveStatus(stack, id).catch(() => null);
          throw new Error(`${id} did not settle: ${String(error)}; the open run shows ${JSON.stringify(live)}`);
        });
      },
      { temporalAddress: `127.0.0.1:${temporalLink.port}` },
    );
  }

  /** Revision 2 was carried: one object, revision 2's body, one attempt per revision, each under its own key. */
  async function sentOnceAsRevision2(id: string) {
    const trail = await readTrail(stack.ledger.db, id);
    assert.ok(trail);
    assert.deepEqual([trail.effect.stage, trail.effect.revision], ['recorded', 2]);
    assert.deepEqual(
      trail.attempts.map((a) => [a.releaseRevision, a.attemptNumber, a.idempotencyKey]),
      [
        [1, 1, id],
        [2, 1, `${id}#r2`],
      ],
    );
    const objects = await objectsFor(stack, id);
    assert.equal(objects.length, 1);
    assert.equal(objects[0]?.body_sha256, trail.releases.find((r) => r.revision === 2)?.bodySha256);
    await assertProviderSaw(stack, id, { posts: 2 });
  }

  /** A refund the keyed API refuses (HTTP 400: a non-positive amount): rejected, nothing at the provider. */
  async function refusedRefund(id: string) {
    const result = await stack.withWorker(async () => {
      await effects.approve(refundRequest(id, -40));
      return resultOf(stack, id);
    });
    assert.equal(result.stage, 'rejected');
    assert.equal((await objectsFor(stack, id)).length, 0);
  }

  /** Everything the ledger holds for an effect, to prove a refusal changed nothing. */
  async function ledgerRows(id: string) {
    const trail = await readTrail(stack.ledger.db, id);
    return { trail, revisions: await readRevisions(stack.ledger.db, id) };
  }

  test(
    'a refused refund revised: one object at the provider, with revision 2’s body, under key id#r2',
    TEST_TIMEOUT,
    async () => {
      const id = 'rev:refund-1';
      await refusedRefund(id);
      const result = await stack.withWorker(async () => {
        const revised = await effects.revise(id, { payload: refund(4000), ...OPS });
        assert.deepEqual(revised, { effectId: id, revision: 2, created: true, stage: 'released' });
        return resultOf(stack, id);
      });
      assert.equal(result.stage, 'recorded');
      const trail = await readTrail(stack.ledger.db, id);
      assert.ok(trail);
      assert.equal(trail.effect.stage, 'recorded');
      assert.equal(trail.effect.revision, 2);
      const [r1, r2] = trail.releases;
      assert.deepEqual(
        trail.releases.map((r) => [r.revision, r.step, r.idempotencyKey, r.target]),
        [
          [1, 'main', id, 'POST /v1/objects refund of ch_1001'],
          [2, 'main', `${id}#r2`, 'POST /v1/objects refund of ch_1001'],
        ],
      );
      // Attempts are numbered per revision; each carries its release's key.
      assert.deepEqual(
        trail.attempts.map((a) => [a.releaseRevision, a.attemptNumber, a.idempotencyKey]),
        [
          [1, 1, id],
          [2, 1, `${id}#r2`],
        ],
      );
      // The provider: the refused request under the effect ID, then revision 2's under its own key; one object.
      const posts = await assertProviderSaw(stack, id, { posts: 2 });
      assert.deepEqual(
        posts.map((p) => [p.idempotencyKey, p.bodySha256]),
        [
          [id, r1?.bodySha256],
          [`${id}#r2`, r2?.bodySha256],
        ],
      );
      const objects = await objectsFor(stack, id);
      assert.equal(objects.length, 1);
      assert.equal(objects[0]?.body_sha256, r2?.bodySha256);
      assert.ok(r2, 'revision 2 is released');
      assert.equal(objects[0]?.body_sha256, sha256Hex(canonicalJson((r2.package as { body: unknown }).body)));
      assert.equal(trail.fact?.externalId, objects[0]?.id);
      // The ledger keeps the person's revision: who, under which authorization, why, and what.
      const [revision] = await readRevisions(stack.ledger.db, id);
      assert.equal(revision?.revision, 2);
      assert.equal(revision?.approvedBy, OPS.approvedBy);
      assert.equal(revision?.reason, OPS.reason);
      assert.deepEqual(revision?.payload, refund(4000));
      // The same revision again (a retry after a timeout) is the one taken: nothing new.
      assert.deepEqual(await effects.revise(id, { payload: refund(4000), ...OPS }), {
        effectId: id,
        revision: 2,
        created: false,
        stage: 'recorded',
      });
      // `status` shows every revision.
      const cli = await runCli(stack, ['status', id]);
      assert.equal(cli.code, 0, cli.stderr);
      assert.match(cli.stdout, /revision 2 by ops@example\.com/);
      // The audit pairs revision 2's object (stamped id#r2) with the effect's main step: no findings.
      const audit = await runCli(stack, ['audit', '--json', '--grace', '0', '--provider-url', stack.simulator.url]);
      assert.equal(audit.code, 0, audit.stdout);
    },
  );

  test(
    'a key-less post refused, revised: one post with revision 2’s text, same reference, no key',
    TEST_TIMEOUT,
    async () => {
      const id = 'rev:post-1';
      await stack.simulator.fault('status_422_before_commit', { path: '/social/v1/posts' });
      const refused = await stack.withWorker(async () => {
        await effects.approve(postRequest(id, 'Launch tomorow'));
        return resultOf(stack, id);
      });
      assert.equal(refused.stage, 'rejected');
      const result = await stack.withWorker(async () => {
        await effects.revise(id, { payload: { channel: 'linkedin-ru', text: 'Launch tomorrow' }, ...OPS });
        return resultOf(stack, id);
      });
      assert.equal(result.stage, 'recorded');
      const posts = await socialPostsFor(stack, id);
      assert.equal(posts.length, 1);
      assert.equal(posts[0]?.text, 'Launch tomorrow');
      const trail = await readTrail(stack.ledger.db, id);
      assert.deepEqual(
        trail?.releases.map((r) => [r.revision, r.idempotencyKey]),
        [
          [1, id],
          [2, id],
        ],
        'the feed honours no key: the reference stays the effect ID',
      );
      const sent = await assertProviderSaw(stack, id, { posts: 2 });
      assert.deepEqual(
        sent.map((p) => p.idempotencyKey),
        [null, null],
      );
    },
  );

  test(
    'only a rejected effect takes a revision: recorded, abandoned, unknown, absent are refused, typed, and nothing changes',
    TEST_TIMEOUT,
    async () => {
      const recorded = 'rev:recorded';
      await stack.withWorker(async () => {
        await effects.approve(refundRequest(recorded, 100));
        assert.equal((await resultOf(stack, recorded)).stage, 'recorded');
      });
      const waiting = 'rev:unknown';
      const abandoned = 'rev:abandoned';
      await stack.withWorker(async () => {
        // Two key-less posts lost on the way: each waits for a person in unknown; one is abandoned.
        await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts', count: 2 });
        await effects.approve(postRequest(waiting, 'lost one'));
        await effects.approve(postRequest(abandoned, 'lost two'));
        await waitForStage(stack, waiting, 'unknown', 'human');
        await waitForStage(stack, abandoned, 'unknown', 'human');
        await effects.decide(abandoned, 'abandon', { actor: 'ops@example.com', reason: 'campaign cancelled' });
        assert.equal((await resultOf(stack, abandoned)).stage, 'abandoned');
        for (const [id, payload, stage] of [
          [recorded, refund(200), 'recorded'],
          [abandoned, { channel: 'linkedin-ru', text: 'again' }, 'abandoned'],
          [waiting, { channel: 'linkedin-ru', text: 'again' }, 'unknown'],
        ] as const) {
          const before = await ledgerRows(id);
          await assert.rejects(effects.revise(id, { payload, ...OPS }), (error) => {
            assert.ok(error instanceof RevisionRefusedError, String(error));
            assert.equal(error.code, 'not_rejected');
            assert.match(error.message, new RegExp(`it is ${stage}`));
            return true;
          });
          assert.deepEqual(await ledgerRows(id), before, `${id}: nothing changed`);
        }
        leftOpenOnPurpose.add(waiting);
      });
      await assert.rejects(effects.revise('rev:never-approved', { payload: refund(1), ...OPS }), {
        name: 'EffectNotFoundError',
      });
    },
  );

  test(
    'a revision keeps destination, operation and target: the client refuses, and so does the database',
    TEST_TIMEOUT,
    async () => {
      const id = 'rev:intent';
      await refusedRefund(id);
      const before = await ledgerRows(id);
      for (const [request, what] of [
        [{ payload: refund(4000), destination: 'social-feed' }, /destination/],
        [{ payload: refund(4000), operation: 'task.create' }, /operation/],
        [{ payload: refund(4000, 'ch_other') }, /target/],
      ] as const) {
        await assert.rejects(effects.revise(id, { ...request, ...OPS }), (error) => {
          assert.ok(error instanceof RevisionRefusedError, String(error));
          assert.equal(error.code, 'intent_changed');
          assert.match(error.message, what);
          return true;
        });
      }
      assert.deepEqual(await ledgerRows(id), before);
      // Written by hand past the client: a release of another operation, or another target, is refused.
      const { sql } = stack.ledger;
      const revise = (operation: string, target: string) =>
        sql.begin(async (tx) => {
          await tx`INSERT INTO revisions (effect_id, revision, payload, fingerprint, intent_sha256, approved_by, authorization_ref, reason)
                 VALUES (${id}, 2, '{}', ${'a'.repeat(64)}, ${'b'.repeat(64)}, 'mallory', 'X-1', 'by hand')`;
          await tx`INSERT INTO releases (effect_id, revision, destination, operation, target, package, body_sha256, released_by, idempotency_key)
                 VALUES (${id}, 2, 'keyed-api', ${operation}, ${target}, '{}', ${'c'.repeat(64)}, 'mallory', ${`${id}#r2`})`;
          await tx`UPDATE effects SET stage = 'released', revision = 2 WHERE effect_id = ${id}`;
        });
      await assert.rejects(revise('task.create', 'POST /v1/objects refund of ch_1001'), /destination or operation/);
      await assert.rejects(revise('refund.create', 'POST /v1/objects refund of ch_other'), /changes its target/);
      assert.deepEqual(await ledgerRows(id), before);
    },
  );

  test(
    'two revisions at once: the database lets one win; the other is refused and changes nothing',
    TEST_TIMEOUT,
    async () => {
      const id = 'rev:race';
      await refusedRefund(id);
      const results = await Promise.allSettled([
        effects.revise(id, { payload: refund(4000), ...OPS }),
        effects.revise(id, { payload: refund(5000), ...OPS, approvedBy: 'bo@example.com' }),
      ]);
      const won = results.filter((r) => r.status === 'fulfilled');
      const lost = results.filter((r) => r.status === 'rejected');
      assert.equal(won.length, 1, JSON.stringify(results));
      assert.equal(lost.length, 1);
      const reason = (lost[0] as PromiseRejectedResult).reason;
      assert.ok(reason instanceof RevisionRefusedError, String(reason));
      assert.equal(reason.code, 'not_rejected');
      const revisions = await readRevisions(stack.ledger.db, id);
      assert.equal(revisions.length, 1);
      const trail = await readTrail(stack.ledger.db, id);
      assert.equal(trail?.releases.filter((r) => r.revision === 2).length, 1);
      // The winner's revision is the one sent.
      const result = await stack.withWorker(() => resultOf(stack, id));
      assert.equal(result.stage, 'recorded');
      const [object] = await objectsFor(stack, id);
      assert.ok(object && revisions[0], 'one object, one revision');
      assert.equal((object.request as { amount?: number }).amount, (revisions[0].payload as { amount: number }).amount);
    },
  );

  test(
    'the database refuses a move out of rejected without a revision, and a revision that did not move',
    TEST_TIMEOUT,
    async () => {
      const id = 'rev:by-hand';
      await refusedRefund(id);
      const before = await ledgerRows(id);
      const { sql } = stack.ledger;
      await assert.rejects(sql`UPDATE effects SET stage = 'released' WHERE effect_id = ${id}`, /terminal/);
      await assert.rejects(
        sql`UPDATE effects SET stage = 'released', revision = 2 WHERE effect_id = ${id}`,
        /terminal/,
      );
      await assert.rejects(sql`UPDATE effects SET stage = 'attempted' WHERE effect_id = ${id}`, /terminal/);
      // A revision row alone never commits: the effect must move to it in the same transaction.
      await assert.rejects(
        sql.begin(
          (
            tx,
          ) => tx`INSERT INTO revisions (effect_id, revision, payload, fingerprint, intent_sha256, approved_by, authorization_ref, reason)
                   VALUES (${id}, 2, '{}', ${'a'.repeat(64)}, ${'b'.repeat(64)}, 'mallory', 'X-1', 'by hand')`,
        ),
        /without moving the effect/,
      );
      // A release of revision 2 without a person's revision row.
      await assert.rejects(
        sql`INSERT INTO releases (effect_id, revision, destination, operation, target, package, body_sha256, released_by, idempotency_key)
          VALUES (${id}, 2, 'keyed-api', 'refund.create', 'POST /v1/objects refund of ch_1001', '{}', ${'c'.repeat(64)}, 'mallory', ${`${id}#r2`})`,
        /no revision approved by a person/,
      );
      // A key that is not the step's own or its revision's (`#r1` is never written; `#r2` only from revision 2 on).
      const keys = 'rev:keys';
      await sql`INSERT INTO effects (effect_id, destination, operation, fingerprint, payload, approved_by, authorization_ref, summary, mechanism)
              VALUES (${keys}, 'keyed-api', 'refund.create', ${'d'.repeat(64)}, '{}', 'ana', 'T-1', 'refund', 'idempotency_key')`;
      await sql`INSERT INTO releases (effect_id, revision, destination, operation, target, package, body_sha256, released_by)
              VALUES (${keys}, 1, 'keyed-api', 'refund.create', 't', '{}', ${'e'.repeat(64)}, 'ana')`;
      for (const key of [`${keys}#r1`, `${keys}#r2`, `${keys}@r2`])
        await assert.rejects(
          sql`INSERT INTO attempts (effect_id, step, attempt_number, idempotency_key, release_revision, workflow_run_id)
            VALUES (${keys}, 'main', 1, ${key}, 1, 'by-hand')`,
          /key_is_effect_scoped/,
          key,
        );
      assert.deepEqual(await ledgerRows(id), before);
    },
  );

  // After the audit above (it reads the whole ledger, and the provider is fresh for each test).
  test(
    'two revisions at once while the rejected run is closing: a run of revision 2 sends it, once (revise never leaves it to the reconciler)',
    TEST_TIMEOUT,
    async () => {
      const id = 'rev:closing';
      const result = await revisedWhileClosing(id, false);
      assert.equal(result.stage, 'recorded', `the workflow ended ${result.stage}: ${result.reason}`);
      await sentOnceAsRevision2(id);
    },
  );

  test(
    'two revisions at once while the rejected run has lost its answer: the run on revision 1 learns the refusal from the ledger and hands over; never "not sent" for good',
    TEST_TIMEOUT,
    async () => {
      const id = 'rev:answer-lost';
      const result = await revisedWhileClosing(id, true);
      assert.equal(result.stage, 'recorded', `the workflow ended ${result.stage}: ${result.reason}`);
      await sentOnceAsRevision2(id);
    },
  );

  test(
    'a run started on a revision the effect has moved past (a client that read the effect before the revision) hands over to the current one; its refused attempt is never "not sent"',
    TEST_TIMEOUT,
    async () => {
      const id = 'rev:stale-start';
      await refusedRefund(id);
      // The first run's own input: what a client that read the effect before the revision would start.
      const first = stack.env.client.workflow.getHandle(id);
      let input: EffectInput | undefined;
      for (const event of (await first.fetchHistory()).events ?? []) {
        const payload = event.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
        if (payload) input = defaultPayloadConverter.fromPayload<EffectInput>(payload);
      }
      assert.ok(input && input.releaseRevision === undefined, 'the approval ran revision 1');
      // Revised with no worker polling: its run has not sent anything yet when the stale start takes its place.
      await effects.revise(id, { payload: refund(4000), ...OPS });
      await first.terminate('an operator ended the revision’s run before it sent');
      await stack.env.client.workflow.start(EFFECT_WORKFLOW_TYPE, {
        workflowId: id,
        taskQueue: stack.taskQueue,
        args: [input],
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      });
      const result = await stack.withWorker(() =>
        resultOf(stack, id, 60_000).catch(async (error: unknown) => {
          const live = await liveStatus(stack, id).catch(() => null);
          throw new Error(`${id} did not settle: ${String(error)}; the open run shows ${JSON.stringify(live)}`);
        }),
      );
      assert.equal(result.stage, 'recorded', `the workflow ended ${result.stage}: ${result.reason}`);
      await sentOnceAsRevision2(id);
    },
  );

  test(
    'a refusal whose answer is lost to its run (the send activity timed out after recording it): the run takes the answer from the ledger: rejected, one request, no readback',
    TEST_TIMEOUT,
    async () => {
      const id = 'rev:lost-refusal';
      const result = await revisedWhileClosing(id, true, false);
      assert.equal(result.stage, 'rejected');
      await assertProviderSaw(stack, id, { posts: 1 });
      const trail = await readTrail(stack.ledger.db, id);
      assert.deepEqual(
        trail?.evidence.map((e) => [e.kind, e.outcome]),
        [['response', 'rejected']],
        'the recorded answer stands: no second request, no readback, no "unknown" written over it',
      );
    },
  );
});
