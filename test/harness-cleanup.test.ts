// A stuck test harness leaves nothing behind: SIGKILL a harness process that runs a dev server (Core spawns
// it), the provider simulator, a worker process and a Mailpit (a Go server, as the cluster's are), and every
// one of them exits (stack/reaper.ts, the one way children are supervised); the next run's sweep drops the
// database it could not, and leaves alone the databases of runs still in progress. Without the reaper, the
// simulator and Mailpit outlive the harness: the check bites.
import assert from 'node:assert/strict';
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { parentPid } from '../stack/proc-stat.js';
import { claimDatabase, listThrowawayDatabases, sweepThrowawayDatabases } from '../stack/test-databases.js';
import { waitFor, within } from '../stack/wait-for.js';

const stuckHarness = fileURLToPath(new URL('./support/stuck-harness.ts', import.meta.url));

interface Started {
  /** The harness's own PID. */
  pid: number;
  devServer: number[];
  simulator: number;
  worker: number;
  mailpit: number[];
  database: string;
}

const adminUrl = 'postgres://postgres@127.0.0.1:5432/postgres';
const childrenOf = (started: Started) => [...started.devServer, started.simulator, started.worker, ...started.mailpit];

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Every process below `pid`, from /proc. */
function descendantsOf(pid: number): number[] {
  const all = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map((name) => [Number(name), parentPid(Number(name))] as const);
  const found: number[] = [];
  const walk = (parent: number) => {
    for (const [child, ppid] of all)
      if (ppid === parent) {
        found.push(child);
        walk(child);
      }
  };
  walk(pid);
  return found;
}

function startedBy(harness: ChildProcessByStdio<null, Readable, null>): Promise<Started> {
  return within(
    new Promise<Started>((resolve, reject) => {
      // Its one JSON line (the dev server writes a banner to the same stdout).
      createInterface({ input: harness.stdout }).on('line', (line) => {
        if (line.startsWith('{')) resolve(JSON.parse(line) as Started);
      });
      harness.once('exit', (code) => reject(new Error(`the harness exited early (${code})`)));
    }),
    'the stuck harness to start its stack',
    // Generous: files run side by side, and a loaded machine starts four servers slowly.
    120_000,
  );
}

/** Runs the stuck harness, SIGKILLs it once its stack is up, and hands what it started to `check`. */
async function killStuckHarness(env: NodeJS.ProcessEnv, check: (started: Started) => Promise<void>): Promise<void> {
  const harness = spawn(process.execPath, ['--import', 'tsx', stuckHarness], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  let started: Started | undefined;
  try {
    started = await startedBy(harness);
    assert.equal(started.devServer.length, 1, 'the dev server is found among the harness’s children');
    assert.equal(started.mailpit.length, 1, 'Mailpit is found among the harness’s children');
    assert.ok(childrenOf(started).every(running));
    harness.kill('SIGKILL');
    await check(started);
  } finally {
    if (harness.exitCode === null && harness.signalCode === null) {
      // A harness that never said what it started (it failed, or was too slow): its children go with it
      // here, whether or not its reaper is on.
      const children = harness.pid ? descendantsOf(harness.pid) : [];
      harness.kill('SIGKILL');
      for (const pid of children) if (running(pid)) process.kill(pid, 'SIGKILL');
    }
    // The throwaway database is the one thing a dead harness cannot drop.
    if (started) {
      const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
      await admin.unsafe(`DROP DATABASE IF EXISTS "${started.database}" WITH (FORCE)`).finally(() => admin.end());
    }
  }
}

let goneWithinMs = 0;

test(
  'a SIGKILLed harness takes its dev server, simulator, worker process and Mailpit with it; the sweep takes its database',
  { timeout: 240_000 },
  () =>
    killStuckHarness({}, async (started) => {
      const killedAt = performance.now();
      const children = childrenOf(started);
      await waitFor(
        async () => children.every((pid) => !running(pid)),
        'every child of the killed harness to exit',
        30_000,
      );
      goneWithinMs = performance.now() - killedAt;
      process.stdout.write(`# all children gone ${Math.round(goneWithinMs)} ms after the SIGKILL\n`);

      // Its database is left: the next run's sweep drops it, and keeps those of runs in progress — one
      // claimed by a process that runs (this one), and one nobody claimed that is young (older code's).
      const live = `effect_ledger_sweep_${randomBytes(5).toString('hex')}`;
      const unclaimed = `effect_ledger_sweep_${randomBytes(5).toString('hex')}`;
      const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
      try {
        await admin.unsafe(`CREATE DATABASE "${live}"`);
        await admin.unsafe(`CREATE DATABASE "${unclaimed}"`);
        await claimDatabase(live, adminUrl);
        // PostgreSQL ends the dead harness's sessions once it notices their sockets closed.
        const left = await waitFor(
          async () =>
            (await listThrowawayDatabases(adminUrl)).find((db) => db.name === started.database && !db.connections),
          'the dead harness’s database to have no sessions',
          30_000,
        );
        assert.equal(left.owner?.pid, started.pid, 'the stack claimed its database');
        const dropped = await sweepThrowawayDatabases(adminUrl);
        assert.ok(dropped.includes(started.database), `the dead harness's database is swept (${dropped.join(' ')})`);
        assert.ok(!dropped.includes(live) && !dropped.includes(unclaimed), 'a live run’s databases stay');
        const after = new Set((await listThrowawayDatabases(adminUrl)).map((db) => db.name));
        assert.ok(after.has(live) && after.has(unclaimed) && !after.has(started.database));
      } finally {
        for (const db of [live, unclaimed]) await admin.unsafe(`DROP DATABASE IF EXISTS "${db}" WITH (FORCE)`);
        await admin.end();
      }
    }),
);

test('the check bites: without the reaper, the simulator and Mailpit outlive the harness', { timeout: 240_000 }, () =>
  killStuckHarness({ EFFECT_LEDGER_HARNESS_REAPER: 'off' }, async (started) => {
    // Nothing but the reaper ties them to us. Asserting that nothing happens takes a bounded wait: well past
    // the time the reaper needed above.
    await new Promise((resolve) => setTimeout(resolve, Math.max(3000, 2 * goneWithinMs)));
    const children = childrenOf(started);
    // The worker process and the dev server may end on their own once their output's reader is gone (a log line
    // meets a broken pipe; the dev server logs as it serves): the bite is on what nothing else ties to us — the
    // simulator and Mailpit.
    const untied = [started.simulator, ...started.mailpit];
    try {
      assert.deepEqual(untied.filter(running), untied);
    } finally {
      for (const pid of children) if (running(pid)) process.kill(pid, 'SIGKILL');
    }
  }),
);

test('a stopped test run (Ctrl-C, a cancelled CI job) stops the files it is running', {
  timeout: 120_000,
}, async () => {
  const pidFile = join(mkdtempSync(join(tmpdir(), 'el-endless-')), 'pid');
  // Not as a child of this test run (NODE_TEST_CONTEXT would make it report to us instead of running its files).
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const runner = spawn(
    process.execPath,
    ['--import', 'tsx', 'scripts/test-runner/run.ts', 'test/support/endless-file.ts'],
    {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      stdio: 'ignore',
      env: { ...env, EL_ENDLESS_PID_FILE: pidFile },
    },
  );
  const exited = new Promise((resolve) => runner.once('exit', resolve));
  let file = 0;
  try {
    file = await waitFor(
      async () => (existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8')) || undefined : undefined),
      'the endless file to start',
      60_000,
    );
    runner.kill('SIGTERM');
    await within(exited, 'the runner to exit on SIGTERM', 30_000);
    // Before the runner passed its stop on, the file's process ran on, its runner gone.
    await waitFor(async () => !running(file), 'the endless file to stop with its runner', 30_000);
  } finally {
    runner.kill('SIGKILL');
    if (file && running(file)) process.kill(file, 'SIGKILL');
  }
});
