// `npm run cluster` stops everything it started: on SIGTERM (workers gracefully, then the rest), and, when
// it is SIGKILLed itself, every child exits on its own (setpriv --pdeathsig, the simulator's stdin).
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import postgres from 'postgres';
import { databasesFor, dropClusterDatabases } from '../../harness/cluster/databases.js';
import { waitFor, within } from '../../stack/wait-for.js';
import { projectRoot } from '../../workers/config.js';

const adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const names: string[] = [];

/** Every process below `pid` (children, grandchildren…), from ps. */
function descendants(pid: number): number[] {
  const rows = execFileSync('ps', ['-e', '-o', 'pid=,ppid='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s+/).map(Number) as [number, number]);
  const found: number[] = [];
  const walk = (parent: number) => {
    for (const [child, ppid] of rows)
      if (ppid === parent) {
        found.push(child);
        walk(child);
      }
  };
  walk(pid);
  return found;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The script under a random name (its own databases), on free ports; resolves once it says it is up. */
async function startScript(): Promise<{ child: ChildProcess; output: () => string }> {
  const name = `script_${randomBytes(3).toString('hex')}`;
  names.push(name);
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(projectRoot, 'scripts/cluster.ts'), '--name', name, '--port', '0', '--ui-port', '0'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  await within(
    new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output += chunk;
        if (output.includes('Ctrl-C stops everything')) resolve();
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', (code) => reject(new Error(`npm run cluster exited early (${code}):\n${output}`)));
    }),
    'the cluster script to be up',
    120_000,
  );
  return { child, output: () => output };
}

describe('npm run cluster stops everything it started', { timeout: 300_000 }, () => {
  after(async () => {
    for (const name of names) {
      await dropClusterDatabases(adminUrl, databasesFor(name)).catch(() => {});
      const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
      await admin.unsafe(`DROP DATABASE IF EXISTS "effect_ledger_${name}" WITH (FORCE)`).finally(() => admin.end());
      rmSync(join(projectRoot, '.data', name), { recursive: true, force: true });
    }
  });

  test('on SIGTERM: server, UI, simulator and the three workers are gone, and the script exits 0', async () => {
    const { child, output } = await startScript();
    const children = descendants(child.pid!);
    // The server, the UI server, the simulator and three workers (plus tsx's esbuild helpers).
    assert.ok(children.length >= 6, `children: ${children.join(', ')}`);
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    assert.equal(await exited, 0, output());
    await waitFor(async () => children.every((pid) => !alive(pid)), 'every child to exit', 30_000);
  });

  test('when the script is SIGKILLed, every child exits on its own', async () => {
    const { child } = await startScript();
    const children = descendants(child.pid!);
    assert.ok(children.length >= 6, `children: ${children.join(', ')}`);
    child.kill('SIGKILL');
    await waitFor(
      async () => children.every((pid) => !alive(pid)),
      `every child to exit (still alive: ${children.filter(alive).join(', ')})`,
      30_000,
    );
  });
});
