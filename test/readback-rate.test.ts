// A readback storm held back: effects parked in UNKNOWN at once read back on their destination's own task queue
// (READBACK_QUEUE_PATCH), which the Temporal server hands out at the rate the destination declares. The
// provider's own counter says how many readbacks arrived each second. A provider's 429 with Retry-After slows
// readback down and is never a verdict: every effect still ends recorded, by readback, once.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createDestinations, type DestinationSettings } from '../activities/destinations/registry.js';
import { objectsFor } from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { refundRequest } from '../harness/sample-requests.js';
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
    '40 effects parked at once, 4 readbacks a second declared: the provider never sees more',
    TEST_TIMEOUT,
    async () => {
      const N = 40;
      const RATE = 4;
      const ids = await parkAll('storm', N);
      const started = Date.now();
      await stack.withWorker(() => waitFor(() => settled(ids), `all ${N} recorded, their runs closed`, 150_000), {
        adapters: declaring(RATE),
      });
      const drained = Date.now() - started;
      // One readback of the keyed API is one key lookup (then the object): the lookups count readbacks.
      const seconds = (await stack.simulator.traffic(started)).seconds
        .map((s) => ({ at: s.at, readbacks: s.readsByPath['/v1/idempotency_keys'] ?? 0 }))
        .filter((s) => s.readbacks > 0);
      log(`readbacks a second: ${seconds.map((s) => s.readbacks).join(' ')}; drained in ${drained} ms`);
      const total = seconds.reduce((n, s) => n + s.readbacks, 0);
      assert.equal(total, N, 'one readback per effect');
      const peak = Math.max(...seconds.map((s) => s.readbacks));
      // The server's bucket lets a burst of about one second's worth through after an idle spell.
      assert.ok(peak <= 2 * RATE, `at most ${2 * RATE} readbacks in any second (the rate plus its burst): ${peak}`);
      const span = (seconds.at(-1)!.at - seconds[0]!.at) / 1000;
      assert.ok(span >= N / RATE - 3, `${N} readbacks at ${RATE}/s take about ${N / RATE} s, not ${span} s`);
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
