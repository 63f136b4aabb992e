// "Absent" is no proof while our last request may still be processed: readback withholds it until the
// request's call timeout and the destination's grace have passed. These tests attack how that window is
// judged: a readback that starts inside the window and finishes after it, and a worker whose clock runs
// ahead of the database that stamped the attempt. A key-less post held by the provider (it commits later)
// makes any premature "absent" visible where it matters: a second post on the channel.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertProviderSaw, liveStatus, resultOf, socialPostsFor, waitForStage } from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { postRequest } from '../harness/sample-requests.js';
import { faketimeLibrary, skewedClockEnvironment } from '../harness/skewed-clock.js';
import { startWorkerProcess } from '../harness/worker-process.js';
import { readTrail } from '../ledger/trail.js';
import { startToxiproxy, type ToxiproxyServer } from '../stack/toxiproxy.js';
import { waitFor } from '../stack/wait-for.js';
import { isolateEachTest, TEST_TIMEOUT } from './support/isolation.js';

/** Held answers wait until the test releases them (or the provider is reset after the test). */
const HOLD_MS = 600_000;
const CALL_TIMEOUT_MS = 2000;

describe('the in-flight window of a readback', () => {
  let stack: Stack;
  let toxiproxy: ToxiproxyServer;
  /** The worker's way to the provider: a proxy that can slow its reads. */
  let providerLink: Awaited<ReturnType<ToxiproxyServer['proxy']>>;
  before(async () => {
    // Each assigned as it starts: after() stops whatever did, even when the other failed.
    await Promise.all([
      startStack({ purpose: 'window' }).then((s) => (stack = s)),
      startToxiproxy().then((t) => (toxiproxy = t)),
    ]);
    providerLink = await toxiproxy.proxy('provider', new URL(stack.simulator.url).host);
  });
  after(() => Promise.allSettled([stack?.stop(), toxiproxy?.stop()]));
  isolateEachTest(() => stack);

  const readbacksOf = async (effectId: string) =>
    (await readTrail(stack.ledger.db, effectId))?.evidence.filter((e) => e.kind === 'readback') ?? [];

  test(
    'a readback that begins inside the window and ends after it is no proof of absence: the approved retry waits, the late post is recorded, one post',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'post:straddle';
      const patient = stack.effectsWith({ callTimeoutMs: CALL_TIMEOUT_MS, absenceGraceMs: 6000 });
      await stack.simulator.fault('delay_before_commit', { path: '/social/v1/posts', delayMs: HOLD_MS });
      const viaProxy = `http://127.0.0.1:${providerLink.port}`;
      try {
        const result = await stack.withWorker(
          async () => {
            await patient.approve(postRequest(effectId, 'Straddling the window'));
            await waitForStage(stack, effectId, 'unknown', 'may still be in flight');
            const readsBefore = (await stack.simulator.requests({ method: 'GET' })).length;
            // Every answer from the provider now takes 7 s: longer than what is left of the window.
            await providerLink.proxy.addToxic({
              name: 'slow-reads',
              type: 'latency',
              stream: 'downstream',
              toxicity: 1,
              attributes: { latency: 7000, jitter: 0 },
            });
            // An operator approves a retry at once, as the guide allows: the fresh readback begins inside the window.
            const answer = await patient.decide(effectId, 'approve-retry', {
              actor: 'ops@example.com',
              reason: 'lost',
            });
            assert.equal(answer.accepted, true);
            await waitFor(
              async () => (await stack.simulator.requests({ method: 'GET' })).length > readsBefore,
              'the fresh readback to reach the provider',
            );
            // Our first request commits while that read is on its way back: the read saw nothing.
            assert.equal(await stack.simulator.releaseDelays(), 1);
            await waitFor(async () => (await readbacksOf(effectId)).length >= 2, 'the slow readback to be recorded');
            await toxiproxy.client.reset();
            return resultOf(stack, effectId);
          },
          { providerUrl: viaProxy },
        );
        assert.equal(result.stage, 'recorded');
      } finally {
        await toxiproxy.client.reset();
      }
      const [, straddling] = await readbacksOf(effectId);
      assert.equal(straddling?.outcome, 'inconclusive', 'the read that began inside the window proves nothing');
      assert.equal((await socialPostsFor(stack, effectId)).length, 1, 'one post on the channel');
      await assertProviderSaw(stack, effectId, { posts: 1 });
    },
  );

  test(
    'a worker whose clock runs 30 s ahead of the database still waits out the whole window: the first readback withholds "absent"',
    TEST_TIMEOUT,
    async (t) => {
      if (!faketimeLibrary()) return t.skip('libfaketime is not installed (scripts/setup.sh installs it)');
      const effectId = 'post:clock-ahead';
      const patient = stack.effectsWith({ callTimeoutMs: CALL_TIMEOUT_MS, absenceGraceMs: 5000 });
      await stack.simulator.fault('delay_before_commit', { path: '/social/v1/posts', delayMs: HOLD_MS });
      const ahead = await startWorkerProcess(stack, stack.simulator.url, { env: skewedClockEnvironment(30) });
      try {
        await patient.approve(postRequest(effectId, 'A clock ahead'));
        const first = await waitFor(async () => {
          const s = await liveStatus(stack, effectId);
          return s.readbacks.length >= 1 ? s : undefined;
        }, 'the first readback');
        assert.equal(
          first.readbacks[0]?.outcome,
          'inconclusive',
          `the window is judged by the database's clock, not the worker's: ${JSON.stringify(first.readbacks[0])}`,
        );
        assert.match(first.awaiting ?? '', /may still be in flight until/);
        // The held request commits; the next readback (once the window has passed) finds it.
        assert.equal(await stack.simulator.releaseDelays(), 1);
        assert.equal((await resultOf(stack, effectId)).stage, 'recorded');
      } finally {
        await ahead.kill();
      }
      assert.equal((await socialPostsFor(stack, effectId)).length, 1);
      await assertProviderSaw(stack, effectId, { posts: 1 });
    },
  );
});
