// The worker as its own OS process (workers/main.ts), so a test can SIGKILL it mid-call.
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type Stack, stackEnvironment } from './local-stack.js';

const entry = fileURLToPath(new URL('../workers/main.ts', import.meta.url));

export interface WorkerProcess {
  child: ChildProcess;
  kill(): Promise<void>;
}

export async function startWorkerProcess(stack: Stack, providerUrl = stack.simulator.url): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    env: { ...stackEnvironment(stack), EFFECT_LEDGER_PROVIDER_URL: providerUrl },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // The SDK logs the worker's state changes; RUNNING means it polls the task queue.
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      if (/state: 'RUNNING'|RUNNING/.test(seen)) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`worker process exited (${code}): ${seen.slice(-2000)}`)));
  });
  return {
    child,
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}
