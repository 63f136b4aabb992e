// Multi-step effects: one approval, two outbound steps (a task at the keyed API, then a post on the
// key-less social feed), each with its own key, attempts, evidence, fact and UNKNOWN handling. Judged
// from the provider's own request log and objects, the ledger's rows and the workflow's stage.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { idempotencyKeyFor } from '../domain/idempotency-key.js';
import {
  assertProviderSaw,
  liveStatus,
  objectsFor,
  resultOf,
  socialPostsFor,
  waitForStage,
  wakeWithStaleDecisions,
} from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { taskAnnouncedRequest } from '../harness/sample-requests.js';
import { waitFor } from '../stack/wait-for.js';
import { runCli } from './support/cli.js';
import { isolateEachTest, TEST_TIMEOUT } from './support/isolation.js';

const OPS = 'ops@example.com';

describe('multi-step effects', () => {
  let stack: Stack;
  // The social feed's 60 s absence grace would only delay these tests' readbacks; it has its own tests.
  let effects: Stack['effects'];
  before(async () => {
    stack = await startStack();
    effects = stack.effectsWith({ absenceGraceMs: 0 });
  });
  after(() => stack?.stop());
  isolateEachTest(() => stack);

  /** Both steps' objects at their destinations, each stamped with its step's reference. */
  async function objectsOfBothSteps(effectId: string) {
    const tasks = await objectsFor(stack, effectId);
    const posts = await socialPostsFor(stack, idempotencyKeyFor(effectId, 'announce'));
    return { tasks, posts };
  }

  test('two steps: one object per step at its destination, one fact per step, recorded', TEST_TIMEOUT, async (t) => {
    const id = 'steps:happy';
    const result = await stack.withWorker(async () => {
      await effects.approve(taskAnnouncedRequest(id, 'request-31'));
      return resultOf(stack, id);
    });
    assert.equal(result.stage, 'recorded');
    await assertProviderSaw(stack, id, { posts: 1, step: 'main' });
    const [post] = await assertProviderSaw(stack, id, { posts: 1, step: 'announce' });
    assert.equal(post!.idempotencyKey, null, 'the key-less feed gets no key; the post carries effectID~announce');
    const { tasks, posts } = await objectsOfBothSteps(id);
    assert.equal(tasks.length, 1);
    assert.equal(posts.length, 1);
    const { trail } = await effects.status(id);
    assert.equal(trail.effect.stage, 'recorded');
    assert.deepEqual(
      trail.releases.map((r) => [r.step, r.position, r.destination, r.operation]),
      [
        ['main', 1, 'keyed-api', 'task.create'],
        ['announce', 2, 'social-feed', 'post.publish'],
      ],
    );
    assert.deepEqual(
      trail.attempts.map((a) => [a.step, a.attemptNumber, a.idempotencyKey]),
      [
        ['main', 1, id],
        ['announce', 1, `${id}~announce`],
      ],
    );
    assert.deepEqual(
      trail.facts.map((f) => [f.step, f.destination, f.externalId, f.confirmedBy]),
      [
        ['main', 'keyed-api', tasks[0]!.id, 'provider_response'],
        ['announce', 'social-feed', posts[0]!.id, 'provider_response'],
      ],
    );
    assert.equal(trail.waitingOnStep, null);
    const history = await stack.env.client.workflow.getHandle(id).fetchHistory();
    t.diagnostic(`history events of the two-step happy path: ${history.events?.length}`);
  });

  test(
    "step 2's answer lost → unknown → readback of step 2 only → recorded; step 1 never sent again",
    TEST_TIMEOUT,
    async () => {
      const id = 'steps:lost-announce';
      await stack.simulator.fault('drop_after_commit', { path: '/social/v1/posts' });
      const result = await stack.withWorker(async () => {
        await effects.approve(taskAnnouncedRequest(id, 'request-32'));
        return resultOf(stack, id);
      });
      assert.equal(result.stage, 'recorded');
      // Nothing read step 1 back: no lookup by its key, no search for its reference at the keyed API.
      const reads = await stack.simulator.requests({ method: 'GET' });
      assert.deepEqual(
        reads.filter((r) => r.path.startsWith('/v1/')).map((r) => r.path),
        [],
        'step 1 (the task) was never read back',
      );
      await assertProviderSaw(stack, id, { posts: 1, step: 'main' });
      const [post] = await assertProviderSaw(stack, id, { posts: 1, step: 'announce' });
      assert.deepEqual([post!.fault, post!.fate], ['drop_after_commit', 'dropped']);
      const { tasks, posts } = await objectsOfBothSteps(id);
      assert.equal(tasks.length, 1);
      assert.equal(posts.length, 1);
      const { trail } = await effects.status(id);
      assert.deepEqual(
        trail.evidence.map((e) => [e.step, e.kind, e.outcome]),
        [
          ['main', 'response', 'confirmed'],
          ['announce', 'response', 'unknown'],
          ['announce', 'readback', 'found'],
        ],
      );
      assert.deepEqual(
        trail.facts.map((f) => [f.step, f.externalId, f.confirmedBy]),
        [
          ['main', tasks[0]!.id, 'provider_response'],
          ['announce', posts[0]!.id, 'readback'],
        ],
      );
    },
  );

  test(
    'status names the step waited on (client, CLI, search attribute); a retry of step 2 leaves step 1 alone',
    TEST_TIMEOUT,
    async () => {
      const id = 'steps:awaiting-announce';
      // The post never reaches the feed: readback proves absence; a key-less step waits for a person.
      await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
      await stack.withWorker(async () => {
        await effects.approve(taskAnnouncedRequest(id, 'request-33'));
        const live = await waitForStage(stack, id, 'unknown', 'a human decision');
        assert.equal(live.step, 'announce');
        assert.match(live.awaiting ?? '', /^step announce \(2 of 2\): a human decision/);
        assert.deepEqual(
          live.steps?.map((s) => [s.step, s.state, s.idempotencyKey]),
          [
            ['main', 'done', id],
            ['announce', 'in_progress', `${id}~announce`],
          ],
        );
        const report = await effects.status(id);
        assert.equal(report.trail.waitingOnStep, 'announce');
        assert.deepEqual(
          report.trail.facts.map((f) => f.step),
          ['main'],
        );
        const cli = await runCli(stack, ['status', id]);
        assert.equal(cli.code, 0, cli.stderr);
        assert.match(cli.stdout, /waiting on step announce/);
        assert.match(cli.stdout, /awaiting: step announce \(2 of 2\): a human decision/);
        await waitFor(async () => {
          const listed = [];
          for await (const w of stack.env.client.workflow.list({
            query: `EffectStep = "announce" AND WorkflowId = "${id}"`,
          }))
            listed.push(w.workflowId);
          return listed.length === 1;
        }, 'the UI to list the effect under EffectStep = "announce"');

        const decided = await effects.decide(id, 'approve-retry', { actor: OPS, reason: 'nothing on the channel' });
        assert.equal(decided.accepted, true);
        assert.equal((await resultOf(stack, id)).stage, 'recorded');
      });
      await assertProviderSaw(stack, id, { posts: 1, step: 'main' });
      await assertProviderSaw(stack, id, { posts: 2, step: 'announce' });
      const { tasks, posts } = await objectsOfBothSteps(id);
      assert.equal(tasks.length, 1);
      assert.equal(posts.length, 1);
      const { trail } = await effects.status(id);
      assert.deepEqual(
        trail.attempts.map((a) => [a.step, a.attemptNumber]),
        [
          ['main', 1],
          ['announce', 1],
          ['announce', 2],
        ],
      );
      assert.deepEqual(
        trail.facts.map((f) => f.step),
        ['main', 'announce'],
      );
    },
  );

  test(
    'continued as new after step 1 settled: the next run carries step 2 only (step 1 is never read back or sent again), and a person decides on step 2',
    TEST_TIMEOUT,
    async () => {
      const id = 'steps:continued';
      const handsOver = stack.effectsWith({ absenceGraceMs: 0, readbackIntervalMs: 3000, readbacksPerRun: 2 });
      // The post never reaches the feed: step 2 waits for a person, long enough for the run to continue as new.
      await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts' });
      await stack.withWorker(async () => {
        await handsOver.approve(taskAnnouncedRequest(id, 'request-34'));
        await waitForStage(stack, id, 'unknown', 'a human decision');
        const { runId: firstRun } = await stack.env.client.workflow.getHandle(id).describe();
        await wakeWithStaleDecisions(stack, id, 2, 'announce');
        await waitFor(
          async () =>
            (await stack.env.client.workflow.getHandle(id, firstRun).describe()).status.name === 'CONTINUED_AS_NEW',
          'the first run to continue as new',
        );
        const next = await waitFor(async () => {
          const s = await liveStatus(stack, id);
          const { runId } = await stack.env.client.workflow.getHandle(id).describe();
          return runId !== firstRun && s.awaiting?.includes('a human decision') ? s : undefined;
        }, 'the next run to read back and await a person');
        assert.equal(next.stage, 'unknown', `the next run shows ${next.stage} while it awaits a person`);
        assert.equal(next.step, 'announce');
        assert.deepEqual(
          next.steps?.map((s) => [s.step, s.state]),
          [
            ['main', 'done'],
            ['announce', 'in_progress'],
          ],
        );
        const decided = await handsOver.decide(id, 'approve-retry', { actor: OPS, reason: 'nothing on the channel' });
        assert.equal(decided.accepted, true, decided.reason);
        assert.equal((await resultOf(stack, id)).stage, 'recorded');
      });
      // Step 1 stayed as it happened: one request, one answer, never read back.
      const reads = await stack.simulator.requests({ method: 'GET' });
      assert.deepEqual(
        reads.filter((r) => r.path.startsWith('/v1/')).map((r) => r.path),
        [],
        'step 1 (the task) was never read back',
      );
      await assertProviderSaw(stack, id, { posts: 1, step: 'main' });
      await assertProviderSaw(stack, id, { posts: 2, step: 'announce' });
      const { trail } = await effects.status(id);
      assert.deepEqual(
        trail.evidence.filter((e) => e.step === 'main').map((e) => [e.kind, e.outcome]),
        [['response', 'confirmed']],
      );
      assert.deepEqual(
        trail.facts.map((f) => [f.step, f.confirmedBy]),
        [
          ['main', 'provider_response'],
          ['announce', 'provider_response'],
        ],
      );
    },
  );
});
