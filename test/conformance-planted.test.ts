// The conformance kit's provider-shape faults (issue 26), each proven to bite on a planted unsafe declaration
// (test/planted/unsafe-declarations.ts): a provider clock 10 s behind, an old item pinned to a listing's first
// page, a search lagging writes, a key forgotten after its retention, a 503 after commit on a key-less API, a send
// that outlives its deadline, unix-seconds timestamps. Each planted declaration fails its fault's row, by name,
// with what went wrong; one that the destination API refuses at definition (as issue 26's fix does the key-less
// 503 → not_sent) is asserted refused, naming the field, instead. An
// effect that never closes is reported with why (the failing activity's last error), and the kit, as the person,
// approves a retry only once the in-flight window has ended. Only the planted rows run, with short call timeouts:
// test/conformance.test.ts runs the built-ins' matrix.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { type ConformanceReport, runConformance, type Violation } from '../conformance/run.js';
import { PLANTED, plantedModule } from './planted/unsafe-declarations.js';

let report: ConformanceReport;
let refused: Record<string, readonly string[]>;
const rendered = (v: Violation) => `(${v.phase}): ${v.what}`;

before(async () => {
  const planted = plantedModule();
  const { destinations, conformance } = planted;
  refused = planted.refused;
  report = await runConformance({
    destinations,
    targets: conformance,
    callTimeoutMs: 2000,
    absenceGraceMs: 1000,
    // The planted effects close within seconds, or never (the unix-seconds one): no need to wait a minute.
    closeWithinMs: 30_000,
    kinds: ['main'],
    select: ({ destination, fault }) => PLANTED.some((p) => p.name === destination && p.fault === fault),
  });
  console.log(report.table);
});

describe('the conformance kit on planted unsafe declarations', () => {
  for (const planted of PLANTED)
    test(`${planted.fault}: ${planted.unsafe} (${planted.name}) fails its row, named, or is refused at definition`, () => {
      const refusal = refused[planted.name];
      if (refusal) {
        // Refused, naming the field the user wrote: only where the planted entry expects it.
        assert.ok(planted.refusedAtDefinition, `${planted.name} was refused: ${refusal.join('; ')}`);
        assert.match(refusal.join('; '), planted.refusedAtDefinition);
        return;
      }
      const row = report.destinations.find((d) => d.destination === planted.name);
      assert.ok(row, `${planted.name} ran`);
      assert.equal(row.error, undefined, `${planted.name} was set up`);
      const cell = row.cells.find((c) => c.fault === planted.fault && c.kind === 'main');
      assert.ok(cell, `${planted.name} has a ${planted.fault} row (n/a: ${JSON.stringify(row.skipped)})`);
      const found = report.violations.filter((v) => v.destination === planted.name && v.fault === planted.fault);
      for (const expected of planted.violations)
        assert.ok(
          found.some((v) => expected.test(rendered(v))),
          `${expected} among ${JSON.stringify(found.map(rendered), null, 1)}`,
        );
      assert.match(report.table, new RegExp(`^  ${planted.fault}\\s+main \\(E\\) .*VIOLATION`, 'm'));
      assert.match(report.table, new RegExp(`^  ${planted.name} · ${planted.fault} · main \\(E\\) \\(`, 'm'));
    });

  test('an effect that never closed is reported with why: its failing activity and that activity’s last error', () => {
    const stuck = report.destinations
      .find((d) => d.destination === 'planted-time-parsed-as-text')
      ?.cells.find((c) => c.fault === 'epoch-timestamps');
    assert.ok(stuck?.workflow, 'the unix-seconds row ran its workflow');
    assert.equal(stuck.workflow.stage, null, 'it did not close');
    assert.match(stuck.workflow.open ?? '', /^stage \w+; .*failing, attempt \d+: .*Invalid time value \(RangeError\)/);
  });

  test('the kit, as the person, approves a retry only after the in-flight window has ended', () => {
    // Every decision the kit made, in every row, as the ledger took it (decided_at) against the end of the
    // in-flight window of the step's last attempt before it (started_at + when its send began + T + grace).
    const decided = report.destinations.flatMap((d) =>
      d.cells.flatMap((c) =>
        (c.workflow?.decisionsByKit ?? []).map((decision) => ({ row: `${d.destination} ${c.fault}`, ...decision })),
      ),
    );
    assert.ok(decided.length >= 2, `the kit decided in several rows (${JSON.stringify(decided)})`);
    for (const decision of decided) {
      assert.equal(decision.kind, 'approve-retry');
      assert.ok(decision.windowEndedAt, `${decision.row}: an attempt preceded it`);
      assert.ok(
        Date.parse(decision.decidedAt) >= Date.parse(decision.windowEndedAt),
        `${decision.row}: decided at ${decision.decidedAt}, inside the window that ended at ${decision.windowEndedAt}`,
      );
    }
  });
});
