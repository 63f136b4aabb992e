// The small chaos configuration on the cluster: three worker processes, one worker SIGKILL, one SIGKILL of
// the Temporal server process (started again on the same PostgreSQL databases), provider faults,
// pg_terminate_backend, an approver killed after its ledger write, a run terminated from the outside, human
// decisions → no duplicate, nothing lost, nothing stuck. (test/chaos.test.ts runs the same on the dev server.)
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TEMPORAL_TARGET_ENV } from '../../harness/temporal-target.js';
import { explainedStuck, type RunVerdict, runChaos, summarize } from '../../scripts/chaos/run.js';
import { FIXED_MIX, FIXED_SKEW } from '../support/fixed-mix.js';

process.env[TEMPORAL_TARGET_ENV] = 'cluster';
const log = (line: string) => process.stdout.write(`# ${line}\n`);
const SEED = 20261130;

function lostOf(v: RunVerdict): number {
  const explained = explainedStuck(v);
  return (
    v.audit.findings.filter((f) => f.kind === 'lost' && !(f.effectId && explained.has(f.effectId))).length +
    v.violations.filter((x) => x.kind === 'lost').length
  );
}

describe('chaos run on the cluster', () => {
  test(`seed ${SEED}: ~14 effects, three workers, a worker and the server killed → no duplicates, nothing lost`, {
    timeout: 600_000,
  }, async () => {
    const [outcome] = await runChaos({
      effects: 14,
      kills: 1,
      devRestarts: 1,
      dies: 1,
      terminations: 1,
      seeds: 1,
      seedList: [SEED],
      workers: 3,
      callTimeoutMs: 2000,
      settleMs: 150_000,
      reconcileMs: 30_000,
      shrinkMs: 0,
      mix: FIXED_MIX,
      skewSeconds: FIXED_SKEW,
      log,
    });
    const verdict = outcome?.verdict;
    assert.ok(verdict, `no verdict: ${outcome?.error}`);
    const story = summarize(verdict).join('\n');
    log(`stack: ${JSON.stringify(verdict.stackStats)}; counts ${JSON.stringify(verdict.counts)}`);
    assert.equal(verdict.audit.counts.duplicate, 0, `duplicates\n${story}`);
    assert.equal(lostOf(verdict), 0, `lost effects\n${story}`);
    const stuck = verdict.audit.findings.filter((f) => f.kind === 'stuck');
    assert.equal(stuck.length, 0, `stuck, not resumed by the reconciler\n${story}`);
  });
});
