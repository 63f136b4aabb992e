// A readback storm held back: effects parked in UNKNOWN at once read back on their destination's own task queue
// (READBACK_QUEUE_PATCH), which the Temporal server hands out at the rate the destination declares, and each of
// their requests takes its turn in the ledger (readback_pace) at that rate. The provider's own counter says how
// many requests arrived each second: never more than declared. A provider's 429 with Retry-After slows
// readback down and is never a verdict: every effect still ends recorded, by readback, once.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createDestinations, type DestinationSettings } from '../activities/destinations/registry.js';
import { objectsFor } from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { refundRequest } from '../harness/sample-requests.js';
import { readsAt } from '../harness/simulator/traffic.js';
import { waitFor } from '../stack/wait-for.js';
import { isolateEachTest, TEST_TIMEOUT } from './support/isolation.js';

const log = (line: string) => process.stdout.write(`# ${line}\n`);

/** The keyed destination, declaring `rate` readbacks a second. */
const declaring = (rate: number) => (settings: DestinationSettings) => {
  const destinations = createDestinations(settings);
  return { ...destinations, 'keyed-api': { ...destinations['keyed-api']!, readbackRatePerSecond: rate } };
};

describe('readbacks at the rate the destination declares', () => {
  let stack: Stack;
  before(async () => {
    stack = await startStack({ purpose: 'readback_rate' });
  });
  after(() => stack?.stop());
  isolateEachTest(() => stack);

  const recorded = async (ids: string[]) => {
    const [row] = await stack.ledger.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM effects WHERE effect_id IN ${stack.ledger.sql(ids)} AND stage = 'recorded'`;
    return row?.n === ids.length;
  };

  /** Recorded in the ledger and their runs closed (the run closes just after its ledger write: keep the worker). */
  const settled = async (ids: string[]) => {
    if (!(await recorded(ids))) return false;
    for (const id of ids)
      if ((await stack.env.client.workflow.getHandle(id).describe()).status.name === 'RUNNING') return false;
    return true;
  };

  /** Approved while no worker runs, so that every send (each answered with a dropped connection) leaves at once. */
  const parkAll = async (prefix: string, n: number) => {
    const ids = Array.from({ length: n }, (_, i) => `refund:${prefix}-${i}`);
    await stack.simulator.fault('drop_after_commit', { path: '/v1/objects', count: n });
    for (const [i, id] of ids.entries()) await stack.effects.approve(refundRequest(id, 100 + i));
    return ids;
  };

  /** One object each, and one readback each, which found it: a 429 to a read left no evidence at all. */
  const assertOnceByReadback = async (ids: string[]) => {
    for (const id of ids) assert.equal((await objectsFor(stack, id)).length, 1, `${id}: one object`);
    const evidence = await stack.ledger.sql<{ kind: string; outcome: string; n: number }[]>`
      SELECT kind, outcome, count(*)::int AS n FROM provider_evidence
      WHERE effect_id IN ${stack.ledger.sql(ids)} GROUP BY kind, outcome ORDER BY kind, outcome`;
    const byKind = (kind: string) => evidence.filter((e) => e.kind === kind).map((e) => [e.outcome, e.n]);
    assert.deepEqual(byKind('readback'), [['found', ids.length]]);
    // A POST answered 429 is "not sent" (and sent again); the dropped one is the effect's one unknown.
    assert.deepEqual(
      byKind('response').filter(([outcome]) => outcome !== 'not_sent'),
      [['unknown', ids.length]],
    );
  };

  test(
    '20 effects parked at once, 4 readback requests a second declared: the provider never sees more in any second',
    TEST_TIMEOUT,
    async () => {
      const N = 20;
      const RATE = 4;
      const ids = await parkAll('storm', N);
      const started = Date.now();
      await stack.withWorker(() => waitFor(() => settled(ids), `all ${N} recorded, their runs closed`, 150_000), {
        adapters: declaring(RATE),
      });
      const drained = Date.now() - started;
      // A keyed readback is a key lookup, then the object: two requests, each taking its turn (readback_pace).
      const seconds = (await stack.simulator.traffic(started)).seconds
        .map((s) => ({ at: s.at, reads: readsAt(s, 'keyed-api') }))
        .filter((s) => s.reads > 0);
      log(`readback requests a second: ${seconds.map((s) => s.reads).join(' ')}; drained in ${drained} ms`);
      const total = seconds.reduce((n, s) => n + s.reads, 0);
      assert.ok(total >= 2 * N, `a lookup and an object per effect: ${total} requests`);
      const peak = Math.max(...seconds.map((s) => s.reads));
      assert.ok(peak <= RATE, `at most ${RATE} requests in any second: ${peak}`);
      const span = (seconds.at(-1)!.at - seconds[0]!.at) / 1000;
      assert.ok(span >= total / RATE - 2, `${total} requests at ${RATE}/s take about ${total / RATE} s, not ${span} s`);
      await assertOnceByReadback(ids);
    },
  );

  test(
    'the provider answers 429 with Retry-After to readbacks: slowed, never a verdict; all recorded once',
    TEST_TIMEOUT,
    async () => {
      const N = 12;
      const ids = await parkAll('throttled', N);
      // Two requests a second: a readback is two (the key, then the object), so most readbacks meet a 429.
      await stack.simulator.rateLimit(2, 1);
      const started = Date.now();
      await stack.withWorker(() => waitFor(() => settled(ids), `all ${N} recorded, their runs closed`, 150_000), {
        adapters: declaring(25),
      });
      const traffic = await stack.simulator.traffic(started);
      log(
        `${traffic.totals.limited} requests answered 429, ${traffic.totals.reads} reads, in ${Date.now() - started} ms`,
      );
      assert.ok(traffic.totals.limited > 0, 'the provider did limit readbacks');
      for (const second of traffic.seconds) assert.ok(second.reads + second.writes - second.limited <= 2);
      await stack.simulator.rateLimit(null); // the checks below read the provider's API too
      await assertOnceByReadback(ids);
    },
  );
});
