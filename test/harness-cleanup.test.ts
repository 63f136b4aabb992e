// A stuck test harness leaves nothing behind: SIGKILL a harness process that runs a dev server, the
// provider simulator and a worker process, and every one of them exits (harness/reaper.ts; the simulator
// watches its own stdin).
import assert from 'node:assert/strict';
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { waitFor, within } from '../harness/wait-for.js';

const stuckHarness = fileURLToPath(new URL('./support/stuck-harness.ts', import.meta.url));

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test('a SIGKILLed harness takes its dev server, simulator and worker process with it', {
  timeout: 120_000,
}, async () => {
  const harness = spawn(process.execPath, ['--import', 'tsx', stuckHarness], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await killedHarnessLeavesNothing(harness);
  } finally {
    if (harness.exitCode === null && harness.signalCode === null) harness.kill('SIGKILL');
  }
});

async function killedHarnessLeavesNothing(harness: ChildProcessByStdio<null, Readable, null>): Promise<void> {
  // Its one JSON line (the dev server also writes a banner to the same stdout).
  const started = await within(
    new Promise<{ devServer: number[]; simulator: number; worker: number; database: string }>((resolve, reject) => {
      createInterface({ input: harness.stdout }).on('line', (line) => {
        if (line.startsWith('{')) resolve(JSON.parse(line));
      });
      harness.once('exit', (code) => reject(new Error(`the harness exited early (${code})`)));
    }),
    'the stuck harness to start its stack',
  );
  const children = [...started.devServer, started.simulator, started.worker];
  assert.equal(started.devServer.length, 1, 'the dev server was found among the harness’s children');
  assert.ok(children.every(running));

  const killedAt = performance.now();
  harness.kill('SIGKILL');
  await waitFor(
    async () => children.every((pid) => !running(pid)),
    'every child of the killed harness to exit',
    30_000,
  );
  process.stdout.write(`# all children gone ${Math.round(performance.now() - killedAt)} ms after the SIGKILL\n`);

  // The throwaway database is the one thing a dead harness cannot drop.
  const admin = postgres('postgres://postgres@127.0.0.1:5432/postgres', { max: 1, onnotice: () => {} });
  await admin.unsafe(`DROP DATABASE IF EXISTS "${started.database}" WITH (FORCE)`).finally(() => admin.end());
}
