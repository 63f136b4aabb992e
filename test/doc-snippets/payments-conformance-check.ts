// docs/conformance.md shows this file: the kit run from a test of the user's own, on the scratch project's payments
// target (test/consumer/payments-conformance.mjs, which test/package.test.ts runs through the packed kit). Named
// so that npm test does not take it (it needs the payments API running); tsc compiles it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConformanceModule, runConformance } from '../../conformance/index.js';

test('payments keeps one payment per effect under every fault', async () => {
  // The destinations and targets as the command line loads them, from the working directory.
  const { destinations, targets } = await loadConformanceModule('./payments-conformance.mjs');
  const report = await runConformance({ destinations, targets, only: ['payments'], callTimeoutMs: 2000 });
  assert.deepEqual(report.violations, [], report.table);
});
