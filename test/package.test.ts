// effect-ledger as a package in another repository: `npm pack`, the tarball installed into a scratch project
// outside the tree (no tsx there; laid out as npm lays it out: installTarball), backend code of a few lines
// that approves effects, the worker run from the package's `effect-ledger-worker` command, a worker the team
// already runs with effect-ledger as a plugin, and the conformance kit (`effect-ledger-conformance`) on the
// team's own destination — all against a running test stack.
// The scratch project's files are test/consumer/ (one file per concern); its own destination talks to a payments
// API of this test's own (test/support/payments-api.ts), not our simulator.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { ConformanceReport } from '../conformance/run.js';
import { objectsFor } from '../harness/effect-probes.js';
import { type Stack, stackEnvironment, startStack } from '../harness/local-stack.js';
import { startWorkerProcess, type WorkerProcess } from '../harness/worker-process.js';
import { readTrail } from '../ledger/trail.js';
import { locateTemporalCli } from '../stack/temporal-cli.js';
import { toxiproxyBinary } from '../stack/toxiproxy.js';
import { waitFor } from '../stack/wait-for.js';
import { LEDGER_RECONCILER_SCHEDULE_ID } from '../workers/ledger-reconciler.js';
import { LEDGER_RECONCILER_WORKFLOW_TYPE } from '../workflows/ledger-reconciler.js';
import { TEST_TIMEOUT } from './support/isolation.js';
import { type PaymentsApi, startPaymentsApi } from './support/payments-api.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
const consumer = fileURLToPath(new URL('./consumer/', import.meta.url));

/**
 * Installs the packed tarball into the scratch project as npm lays it out, without npm's resolver (npm install
 * took two minutes of the file's wall on a loaded machine, all of it npm's own work): the tarball unpacked into
 * node_modules/effect-ledger, each dependency its package.json declares — and the scratch project's own, `extra`
 * — linked from this repository's node_modules, and its `bin` commands in node_modules/.bin. Nothing else is
 * reachable from the scratch project (it lives outside the tree), so the package's code importing a module it
 * does not declare fails here as it would for a user; a linked dependency resolves its own from its real path.
 */
async function installTarball(tarball: string, project: string, extra: string[]): Promise<void> {
  const modules = join(project, 'node_modules');
  const target = join(modules, 'effect-ledger');
  mkdirSync(target, { recursive: true });
  await run('tar', ['-xzf', tarball, '-C', target, '--strip-components=1']);
  const manifest = JSON.parse(readFileSync(join(target, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
    bin?: Record<string, string>;
  };
  for (const name of new Set([...Object.keys(manifest.dependencies ?? {}), ...extra])) {
    const from = join(root, 'node_modules', name);
    assert.ok(existsSync(from), `${name}: declared by the package but not installed in this repository`);
    mkdirSync(dirname(join(modules, name)), { recursive: true });
    symlinkSync(from, join(modules, name), 'dir');
  }
  mkdirSync(join(modules, '.bin'), { recursive: true });
  for (const [name, file] of Object.entries(manifest.bin ?? {})) {
    chmodSync(join(target, file), 0o755);
    symlinkSync(join('..', 'effect-ledger', file), join(modules, '.bin', name));
  }
}

// Generous: under a loaded cold run (four files at once on two cores) npm pack's build took 131 s and each
// worker's bundling of the installed package 55 s, past an earlier 300 s.
describe('the packed package in a scratch project', { timeout: 540_000 }, () => {
  let stack: Stack;
  let api: PaymentsApi;
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
  const bin = (name: string) => join(scratch, 'node_modules', '.bin', name);
  /** The scratch project's environment: the stack, its payments API, and its destinations module. */
  const env = () => ({
    ...stackEnvironment(stack),
    PAYMENTS_URL: api.url,
    EFFECT_LEDGER_DESTINATIONS: `built-in,${join(scratch, 'payments-destination.mjs')}`,
  });

  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'effect-ledger-consumer-'));
    const [started, packed, payments] = await Promise.all([
      startStack({ purpose: 'package' }),
      // prepack builds dist/ (tsc) first.
      timed('npm pack (with build)', () =>
        run('npm', ['pack', '--pack-destination', scratch, '--json'], { cwd: root }),
      ),
      startPaymentsApi(),
    ]);
    stack = started;
    api = payments;
    const [{ filename }] = JSON.parse(packed.stdout) as [{ filename: string }];
    writeFileSync(join(scratch, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    cpSync(consumer, scratch, { recursive: true });
    chmodSync(join(scratch, 'plugin-worker.mjs'), 0o755);
    await timed('install (tarball)', () => installTarball(join(scratch, filename), scratch, ['zod']));
  });
  after(async () => {
    await worker?.kill();
    await Promise.allSettled([stack?.stop(), api?.stop()]);
    process.stdout.write(`# package test timings (ms): ${JSON.stringify(timings)}\n`);
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  /** One payment at the API for the effect, its fact pointing at it, found by readback after the lost reply. */
  async function assertPaidOnceAfterLostReply(effectId: string) {
    const paid = api.payments().filter((p) => p.metadata.reference === effectId);
    assert.equal(paid.length, 1, 'one payment at the provider');
    assert.deepEqual(
      api
        .posts()
        .filter((p) => p.key === effectId)
        .map((p) => p.answered),
      ['cut'],
      'one request, whose reply was lost after the payment was stored: no second one',
    );
    const trail = await readTrail(stack.ledger.db, effectId);
    assert.equal(trail?.effect.stage, 'recorded');
    assert.equal(trail?.effect.mechanism, 'idempotency_key');
    assert.equal(trail?.attempts.length, 1);
    assert.deepEqual(
      trail?.evidence.map((e) => [e.kind, e.outcome]),
      [
        ['response', 'unknown'],
        ['readback', 'found'],
      ],
    );
    assert.equal(trail?.fact?.confirmedBy, 'readback');
    assert.equal(trail?.fact?.externalId, paid[0]?.id);
    assert.equal(trail?.fact?.externalUrl, `${api.url}/v1/payments/${paid[0]?.id}`);
  }

  test('a service approves an effect with a few lines; the packaged worker records it', TEST_TIMEOUT, async () => {
    assert.ok(!existsSync(join(scratch, 'node_modules', 'tsx')), 'tsx is not installed: plain JavaScript runs');
    const migrated = await timed('effect-ledger-migrate', () =>
      run(bin('effect-ledger-migrate'), [], { cwd: scratch, env: env() }),
    );
    assert.match(migrated.stdout, /ledger migrated/);
    // The workflow bundle is built from the installed package's compiled workflows. The worker hosts the
    // built-ins and the user's own destination, loaded from its file (EFFECT_LEDGER_DESTINATIONS).
    worker = await timed('worker start (bundle)', () =>
      startWorkerProcess(stack, undefined, { command: bin('effect-ledger-worker'), env: env() }),
    );
    const service = await timed('service', () => run(process.execPath, ['service.mjs'], { cwd: scratch, env: env() }));
    assert.deepEqual(JSON.parse(service.stdout), { created: true, stage: 'recorded' });

    const report = await stack.effects.status('refund:pkg-1');
    assert.equal(report.trail.effect.stage, 'recorded');
    assert.equal(report.trail.attempts.length, 1);
    const objects = await objectsFor(stack, 'refund:pkg-1');
    assert.equal(objects.length, 1);
    assert.equal(report.trail.fact?.externalId, objects[0]?.id);
    // The package's CLI answers from the same ledger.
    const status = await run(bin('effect-ledger'), ['status', 'refund:pkg-1', '--json'], { cwd: scratch, env: env() });
    assert.equal(
      (JSON.parse(status.stdout) as { trail: { effect: { stage: string } } }).trail.effect.stage,
      'recorded',
    );
  });

  test(
    'the user’s own destination, from its own file: approved with the CLI, its reply lost, read back and recorded by the packaged worker',
    TEST_TIMEOUT,
    async () => {
      assert.ok(worker, 'the packaged worker of the test before');
      const effectId = 'payment:pkg-1';
      writeFileSync(
        join(scratch, 'payment-1.json'),
        JSON.stringify({
          effectId,
          destination: 'payments',
          operation: 'payment.create',
          payload: { amount: 4200, currency: 'EUR', customer: 'cus_42' },
          approvedBy: 'ana@example.com',
          authorizationRef: 'TICKET-PAY',
        }),
      );
      // The CLI knows the destination from the module it is given (the option; the variable works alike).
      const { EFFECT_LEDGER_DESTINATIONS: _, ...withoutModules } = env();
      const refused = await run(bin('effect-ledger'), ['approve', 'payment-1.json'], {
        cwd: scratch,
        env: withoutModules,
      }).then(
        () => assert.fail('approved without the destination'),
        (error: { code: number; stderr: string }) => error,
      );
      assert.equal(refused.code, 2);
      assert.match(refused.stderr, /unknown destination "payments"/);
      api.loseNextReply();
      const approved = await timed('CLI approve (own destination)', () =>
        run(
          bin('effect-ledger'),
          ['--destinations', 'built-in,./payments-destination.mjs', 'approve', 'payment-1.json'],
          {
            cwd: scratch,
            env: withoutModules,
          },
        ),
      );
      assert.match(approved.stdout, /approved: payment:pkg-1/);
      const result = await timed('own destination, lost reply, packaged worker', () => stack.effects.result(effectId));
      assert.equal(result.stage, 'recorded');
      await assertPaidOnceAfterLostReply(effectId);
    },
  );

  test(
    'a worker the team already runs, with effect-ledger as a plugin: its own workflow still runs, and a payment with a lost reply is read back and recorded',
    TEST_TIMEOUT,
    async () => {
      await worker?.kill();
      // The packaged worker made the reconciler's schedule; the plugin makes it again beside its worker.
      await stack.env.client.schedule.getHandle(LEDGER_RECONCILER_SCHEDULE_ID).delete();
      worker = await timed('plugin worker start (bundle)', () =>
        startWorkerProcess(stack, undefined, { command: join(scratch, 'plugin-worker.mjs'), env: env() }),
      );
      await waitFor(
        () => stack.env.client.schedule.getHandle(LEDGER_RECONCILER_SCHEDULE_ID).describe(),
        'the plugin to make the reconciler schedule',
      );
      // The reconciler's activity runs on the plugin's worker, through a client on the worker's own connection.
      const pass = await stack.env.client.workflow.execute(LEDGER_RECONCILER_WORKFLOW_TYPE, {
        taskQueue: stack.taskQueue,
        workflowId: 'reconciler-pass:pkg',
        args: [30_000],
      });
      const { checked, resumed, couldNotStart } = pass as { checked: number; resumed: number; couldNotStart: number };
      assert.deepEqual({ checked, resumed, couldNotStart }, { checked: 0, resumed: 0, couldNotStart: 0 });
      const greeting = await stack.env.client.workflow.execute('greeting', {
        taskQueue: stack.taskQueue,
        workflowId: 'greeting:pkg',
        args: ['effect-ledger'],
      });
      assert.equal(greeting, 'hello, effect-ledger');
      const effectId = 'payment:pkg-2';
      api.loseNextReply();
      const paid = await timed('own destination, lost reply, plugin worker', () =>
        run(process.execPath, ['pay.mjs', effectId, '1700'], { cwd: scratch, env: env() }),
      );
      const answer = JSON.parse(paid.stdout) as { created: boolean; stage: string; externalId: string };
      assert.equal(answer.stage, 'recorded');
      assert.equal(answer.externalId, api.payments().find((p) => p.metadata.reference === effectId)?.id);
      await assertPaidOnceAfterLostReply(effectId);
    },
  );

  test(
    'the user’s own destination through the conformance kit of the packed package: a small matrix against its API, no violation',
    TEST_TIMEOUT,
    async () => {
      const temporal = locateTemporalCli();
      const json = join(scratch, 'conformance.json');
      // What the kit needs beside the package, as a user provides it (docs/conformance.md): the Temporal CLI and
      // toxiproxy-server (paths, or on PATH), PostgreSQL's admin URL (TEST_DATABASE_ADMIN_URL, inherited here).
      const kitEnv = {
        ...env(),
        PAYMENTS_API_URL: api.url,
        TOXIPROXY_BIN: toxiproxyBinary(),
        ...(temporal.type === 'existing-path' ? { TEMPORAL_CLI: temporal.path } : {}),
      };
      const args = ['./payments-conformance.mjs', 'payments', '--faults', 'late-first-byte,reply-lost'];
      const ran = await timed('conformance kit (own destination, 6 cells)', () =>
        run(bin('effect-ledger-conformance'), [...args, '--call-timeout', '2000', '--json', json], {
          cwd: scratch,
          env: kitEnv,
        }).then(
          ({ stdout }) => ({ code: 0, stdout, stderr: '' }),
          (error: { code: number; stdout: string; stderr: string }) => error,
        ),
      );
      console.log(ran.stdout);
      assert.equal(ran.code, 0, `the kit passes the destination\n${ran.stdout}\n${ran.stderr}`);
      const report = JSON.parse(readFileSync(json, 'utf8')) as ConformanceReport;
      assert.deepEqual(report.violations, []);
      const [payments] = report.destinations;
      assert.equal(payments?.destination, 'payments');
      assert.ok(payments?.calibration, 'calibrated on the API');
      // Every step kind, revisions too: the destination keys per revision.
      const cells = payments?.cells.map((c) => `${c.fault} ${c.kind}`).sort();
      assert.deepEqual(cells, [
        'late-first-byte further',
        'late-first-byte main',
        'late-first-byte revision',
        'reply-lost further',
        'reply-lost main',
        'reply-lost revision',
      ]);
      for (const cell of payments?.cells ?? []) {
        assert.equal(cell.workflow?.stage, 'recorded', `${cell.fault} ${cell.kind}`);
        assert.equal(cell.workflow?.objects, 1, `${cell.fault} ${cell.kind}: one payment`);
        assert.equal(api.payments().filter((p) => p.metadata.reference === cell.workflow?.reference).length, 1);
      }
      for (const label of ['main \\(E\\)', 'further \\(E~further\\)', 'revision \\(E#r2\\)'])
        for (const fault of ['late-first-byte', 'reply-lost'])
          assert.match(
            ran.stdout,
            new RegExp(`^  ${fault}\\s+${label}\\s+unknown .* ok$`, 'm'),
            `the table names ${fault} × ${label}, passed`,
          );
      assert.match(ran.stdout, /^payments · idempotency_key/m);
    },
  );

  test('a caller in another namespace imports the Nexus service definition from effect-ledger/nexus', async () => {
    const { stdout } = await run(process.execPath, ['nexus-service.mjs'], { cwd: scratch });
    assert.deepEqual(JSON.parse(stdout), { service: 'effect-ledger', operations: ['approve', 'status'] });
  });
});
