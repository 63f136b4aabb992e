// npm run outage's small configuration: 30 effects across the keyed API, the key-less feed and the orders
// database park in UNKNOWN while Toxiproxy cuts them (answers lost, then requests too), the outage holds, the
// provider returns behind a rate limit (every parked effect asked to look now), and every effect settles —
// recorded, or waiting for a person with a reason — with nothing duplicated, lost or stuck (the audit: objects at
// every destination against the facts). Then v7's wait on a few probe effects: their looks add no history events.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readsAt } from '../../harness/simulator/traffic.js';
import { formatAudit } from '../../scripts/audit/audit.js';
import { formatOutage } from '../../scripts/outage/format.js';
import { runOutage } from '../../scripts/outage/run.js';

const log = (line: string) => process.stdout.write(`# ${line}\n`);

test('an outage of 30 effects on the cluster: parked, held, back at a rate limit, all settled once', {
  timeout: 900_000,
}, async () => {
  const RATE = 20;
  const report = await runOutage({ effects: 30, holdMs: 10_000, providerRatePerSecond: RATE, log });
  for (const line of formatOutage(report).split('\n')) log(line);
  log(formatAudit(report.audit));
  assert.equal(report.parked, 30, 'every effect parked in UNKNOWN');
  assert.ok(report.settled, `every effect settled: ${JSON.stringify(report.final)}`);
  assert.deepEqual(report.audit.findings, [], 'no duplicate, no object without its fact, none lost or stuck');
  // Once back, every parked effect was asked to look now (the bulk look-now), none failed.
  assert.equal(report.lookNow?.failed, 0, `bulk look-now: ${JSON.stringify(report.lookNow)}`);
  // The end-to-end drain (from the provider back) always has requests; the drain from the last look-now signal may
  // have none when every effect settled by its scheduled look before the signals were all sent.
  assert.ok(
    report.drainEndToEnd && Number.isFinite(report.drainEndToEnd.ratio),
    `drain ratio, end to end: ${JSON.stringify(report.drainEndToEnd)}`,
  );
  assert.ok(report.drain && report.drain.toMs >= report.drain.fromMs, `drain: ${JSON.stringify(report.drain)}`);
  // Workflow v7: a waiting effect's looks are retries of one activity and add no history events; a wake does.
  assert.ok((report.looks?.looks ?? 0) >= 3, `the probe's looks: ${report.looks?.looks}`);
  assert.equal(report.looks?.events, 0, 'the looks added no history events');
  assert.ok((report.looks?.wakes.lookNow.eventsPerWake ?? 0) > 0, 'a look-now signal wakes it: events');
  assert.equal(report.looks?.resetLookNow.events, 0, 'a look-now by reset writes none');
  assert.ok((report.looks?.resetLookNow.resets ?? 0) > 0, 'the probe reset its looks');
  // The provider's own counter: what it let through never exceeded its limit (its 429s are counted apart).
  for (const second of report.traffic) assert.ok(second.reads + second.writes - second.limited <= RATE);
  // Each simulated destination saw at most the readback requests a second it declares, in every second.
  for (const destination of ['keyed-api', 'social-feed']) {
    const declared = report.declaredReadbackRates[destination] ?? 0;
    for (const second of report.traffic)
      assert.ok(
        readsAt(second, destination) <= declared,
        `${destination}: ${readsAt(second, destination)} reads in a second, declared ${declared}`,
      );
  }
});
