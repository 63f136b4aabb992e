// Runs the provider simulator as its own process (a real server on loopback) and waits for its URL.
// Supervised (stack/reaper.ts): it never outlives the process that started it.
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { spawnSupervised } from '../../stack/reaper.js';

const entry = fileURLToPath(new URL('./main.ts', import.meta.url));

export interface SpawnedSimulator {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

export async function spawnSimulator(args: string[] = []): Promise<SpawnedSimulator> {
  // `node --import tsx`, not `npx tsx`: the latter does not pass SIGTERM on.
  const { child, exited, output } = spawnSupervised(process.execPath, [
    '--import',
    'tsx',
    entry,
    '--port',
    '0',
    ...args,
  ]);
  child.stderr?.pipe(process.stderr, { end: false }); // what it complains about shows where we run
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', (line) =>
      resolve((JSON.parse(line) as { url: string }).url),
    );
    child.once('exit', (code) => reject(new Error(`provider simulator exited early (${code}): ${output()}`)));
  });
  return {
    url,
    child,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
