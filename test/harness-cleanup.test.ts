// A stuck test harness leaves nothing behind: SIGKILL a harness process that runs a dev server, the
// provider simulator and a worker process, and every one of them exits (stack/reaper.ts; the simulator
// watches its own stdin). Without the reaper, the dev server outlives it: the check bites.
import assert from 'node:assert/strict';
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { waitFor, within } from '../stack/wait-for.js';

const stuckHarness = fileURLToPath(new URL('./support/stuck-harness.ts', import.meta.url));

interface Started {
  devServer: number[];
  simulator: number;
  worker: number;
  database: string;
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
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
    assert.ok([...started.devServer, started.simulator, started.worker].every(running));
    harness.kill('SIGKILL');
    await check(started);
  } finally {
    if (harness.exitCode === null && harness.signalCode === null) harness.kill('SIGKILL');
    // The throwaway database is the one thing a dead harness cannot drop.
    if (started) {
      const admin = postgres('postgres://postgres@127.0.0.1:5432/postgres', { max: 1, onnotice: () => {} });
      await admin.unsafe(`DROP DATABASE IF EXISTS "${started.database}" WITH (FORCE)`).finally(() => admin.end());
    }
  }
}

let goneWithinMs = 0;

test('a SIGKILLed harness takes its dev server, simulator and worker process with it', { timeout: 120_000 }, () =>
  killStuckHarness({}, async (started) => {
    const killedAt = performance.now();
    const children = [...started.devServer, started.simulator, started.worker];
    await waitFor(
      async () => children.every((pid) => !running(pid)),
      'every child of the killed harness to exit',
      30_000,
    );
    goneWithinMs = performance.now() - killedAt;
    process.stdout.write(`# all children gone ${Math.round(goneWithinMs)} ms after the SIGKILL\n`);
  }),
);

test('the check bites: without the reaper, the dev server outlives the harness', { timeout: 120_000 }, () =>
  killStuckHarness({ EFFECT_LEDGER_HARNESS_REAPER: 'off' }, async (started) => {
    // Core spawns the dev server, so nothing but the reaper ties it to us. (The simulator watches its stdin;
    // worker processes are also started under `setpriv --pdeathsig` where it exists.) Asserting that nothing
    // happens takes a bounded wait: well past the time the reaper needed above.
    await waitFor(async () => !running(started.simulator), 'the simulator to exit on its own', 30_000);
    await new Promise((resolve) => setTimeout(resolve, Math.max(3000, 2 * goneWithinMs)));
    try {
      assert.deepEqual(started.devServer.filter(running), started.devServer);
    } finally {
      for (const pid of [...started.devServer, started.worker]) if (running(pid)) process.kill(pid, 'SIGKILL');
    }
  }),
);
