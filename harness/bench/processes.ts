// Worker processes for the bench: the bare baseline's worker (bare-worker.ts) spawned like
// harness/worker-process.ts spawns workers/main.ts, and the memory reads of any such process.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { reapWithUs } from '../../stack/reaper.js';
import { type Stack, stackEnvironment } from '../local-stack.js';
import type { WorkerProcess } from '../worker-process.js';

const entry = fileURLToPath(new URL('./bare-worker.ts', import.meta.url));

export async function startBareWorkerProcess(stack: Stack, taskQueue: string): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    env: {
      ...stackEnvironment(stack),
      TEMPORAL_TASK_QUEUE: taskQueue,
      EFFECT_LEDGER_PROVIDER_URL: stack.simulator.url,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  reapWithUs(child.pid);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let seen = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      seen = (seen + chunk.toString()).slice(-4000);
      if (seen.includes('RUNNING')) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`bare worker process exited (${code}): ${seen.slice(-2000)}`)));
  });
  return {
    child,
    output: () => seen,
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

export interface Memory {
  /** Resident set size now, MiB. */
  rssMiB: number;
  /** Peak resident set size (VmHWM) since start or since the last resetPeak, MiB. */
  peakMiB: number;
}

/** VmRSS and VmHWM of a live process (Linux /proc), or undefined once it is gone. */
export function memoryOf(pid: number | undefined): Memory | undefined {
  if (pid === undefined) return undefined;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
    return { rssMiB: kib('VmRSS') / 1024, peakMiB: kib('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

/** Resets VmHWM to the current RSS (`5` to /proc/<pid>/clear_refs); false where the kernel refuses. */
export function resetPeak(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}
