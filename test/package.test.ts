// effect-ledger as a package in another repository: `npm pack`, the tarball installed into a scratch
// project outside the tree (no tsx there), a few lines of backend code that approve an effect, and the
// worker run from the package's `effect-ledger-worker` command — all against a running test stack.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { objectsFor } from '../harness/effect-probes.js';
import { type Stack, stackEnvironment, startStack } from '../harness/local-stack.js';
import { startWorkerProcess, type WorkerProcess } from '../harness/worker-process.js';
import { TEST_TIMEOUT } from './support/isolation.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));

// What a backend service writes: connection settings come from the environment, as for every Temporal tool.
const SERVICE = `
import { openEffectLedger } from 'effect-ledger';

const ledger = await openEffectLedger();
try {
  const approval = await ledger.effects.approve({
    effectId: 'refund:pkg-1',
    destination: 'keyed-api',
    operation: 'refund.create',
    payload: { charge: 'ch_pkg', amount: 1200, currency: 'EUR' },
    approvedBy: 'ana@example.com',
    authorizationRef: 'TICKET-PKG',
  });
  const result = await ledger.effects.result(approval.effectId);
  process.stdout.write(JSON.stringify({ created: approval.created, stage: result.stage }));
} finally {
  await ledger.close();
}
`;

describe('the packed package in a scratch project', { timeout: 300_000 }, () => {
  let stack: Stack;
  let scratch: string;
  let worker: WorkerProcess | undefined;
  const timings: Record<string, number> = {};
  const timed = async <T>(what: string, work: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      return await work();
    } finally {
      timings[what] = Math.round(performance.now() - started);
    }
  };

  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'effect-ledger-consumer-'));
    const [started, packed] = await Promise.all([
      startStack({ purpose: 'package' }),
      // prepack builds dist/ (tsc) first.
      timed('npm pack (with build)', () =>
        run('npm', ['pack', '--pack-destination', scratch, '--json'], { cwd: root }),
      ),
    ]);
    stack = started;
    const [{ filename }] = JSON.parse(packed.stdout) as [{ filename: string }];
    writeFileSync(join(scratch, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    writeFileSync(join(scratch, 'service.mjs'), SERVICE);
    await timed('npm install (tarball)', () =>
      run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', join(scratch, filename)], { cwd: scratch }),
    );
  });
  after(async () => {
    await worker?.kill();
    await stack?.stop();
    process.stdout.write(`# package test timings (ms): ${JSON.stringify(timings)}\n`);
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  test('a service approves an effect with a few lines; the packaged worker records it', TEST_TIMEOUT, async () => {
    assert.ok(!existsSync(join(scratch, 'node_modules', 'tsx')), 'tsx is not installed: plain JavaScript runs');
    const bin = (name: string) => join(scratch, 'node_modules', '.bin', name);
    const env = stackEnvironment(stack);
    const migrated = await timed('effect-ledger-migrate', () =>
      run(bin('effect-ledger-migrate'), [], { cwd: scratch, env }),
    );
    assert.match(migrated.stdout, /ledger migrated/);
    // The workflow bundle is built from the installed package's compiled workflows.
    worker = await timed('worker start (bundle)', () =>
      startWorkerProcess(stack, undefined, { command: bin('effect-ledger-worker') }),
    );
    const service = await timed('service', () => run(process.execPath, ['service.mjs'], { cwd: scratch, env }));
    assert.deepEqual(JSON.parse(service.stdout), { created: true, stage: 'recorded' });

    const report = await stack.effects.status('refund:pkg-1');
    assert.equal(report.trail.effect.stage, 'recorded');
    assert.equal(report.trail.attempts.length, 1);
    const objects = await objectsFor(stack, 'refund:pkg-1');
    assert.equal(objects.length, 1);
    assert.equal(report.trail.fact?.externalId, objects[0]?.id);
    // The package's CLI answers from the same ledger.
    const status = await run(bin('effect-ledger'), ['status', 'refund:pkg-1', '--json'], { cwd: scratch, env });
    assert.equal(
      (JSON.parse(status.stdout) as { trail: { effect: { stage: string } } }).trail.effect.stage,
      'recorded',
    );
  });
});
