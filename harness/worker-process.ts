// The worker as its own OS process (workers/main.ts), so a test can SIGKILL it mid-call.
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { tracingRequested } from '../client/tracing.js';
import { spawnSupervised } from '../stack/reaper.js';
import { BUILD_ID_ENV, DEPLOYMENT_NAME_ENV } from '../workers/deployment.js';
import { type Stack, stackEnvironment } from './local-stack.js';
import { stackDeploymentName, stackDeploymentOfFile, workflowBundlePath } from './workflow-bundle.js';

const defaultEntry = fileURLToPath(new URL('../workers/main.ts', import.meta.url));

/** What a worker process needs of a stack (the chaos run builds its own, with a restartable dev server). */
export type WorkerStack = Pick<Stack, 'databaseUrl' | 'namespace' | 'taskQueue'> & {
  env: Pick<Stack['env'], 'address'>;
  simulator: Pick<Stack['simulator'], 'url'>;
};

export interface WorkerProcessOptions {
  /** Another worker entry (a test-only variant); default workers/main.ts. */
  entry?: string;
  /** An executable to run instead of an entry under tsx (the packaged `effect-ledger-worker`). */
  command?: string;
  /** Extra environment, e.g. DATABASE_URL with an application_name. */
  env?: NodeJS.ProcessEnv;
  /** Keep everything it prints for output() (tests of its log); otherwise only what came before RUNNING. */
  keepOutput?: boolean;
}

export interface WorkerProcess {
  child: ChildProcess;
  /** What it has written to stdout and stderr: all of it with keepOutput, else up to RUNNING. */
  output(): string;
  kill(): Promise<void>;
}

export async function startWorkerProcess(
  stack: WorkerStack,
  providerUrl = stack.simulator.url,
  options: WorkerProcessOptions = {},
): Promise<WorkerProcess> {
  // Supervised: a worker never outlives the test, chaos run or cluster script that started it.
  const [file, args] = options.command
    ? [options.command, []]
    : [process.execPath, ['--import', 'tsx', options.entry ?? defaultEntry]];
  // Our own worker gets the workflow bundle made ahead (harness/workflow-bundle.ts): it starts without
  // bundling. The packaged command bundles as a user's worker would.
  // With tracing asked for in its environment, the bundle with the tracing interceptors (docs/tracing.md).
  const tracing = tracingRequested({ ...process.env, ...options.env });
  const bundlePath = options.command ? undefined : await workflowBundlePath('current', { tracing });
  // Its build is its workflow code (the packaged command bundles for itself: a build of its own), made current as
  // soon as it polls; a test's env may name another.
  const version = bundlePath
    ? stackDeploymentOfFile(bundlePath, stack.taskQueue)
    : { deploymentName: stackDeploymentName(stack.taskQueue), buildId: 'package' };
  const { child, exited } = spawnSupervised(file, args, {
    env: {
      ...stackEnvironment(stack),
      EFFECT_LEDGER_PROVIDER_URL: providerUrl,
      ...(bundlePath ? { EFFECT_LEDGER_WORKFLOW_BUNDLE: bundlePath } : {}),
      [DEPLOYMENT_NAME_ENV]: version.deploymentName,
      [BUILD_ID_ENV]: version.buildId,
      EFFECT_LEDGER_BECOME_CURRENT: '1',
      ...options.env,
    },
  });
  let seen = '';
  // The SDK logs the worker's state changes; RUNNING means it polls the task queue.
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      if (!/state: 'RUNNING'|RUNNING/.test(seen)) return;
      // A long-lived worker would grow `seen` forever; the streams keep flowing either way.
      if (!options.keepOutput) {
        child.stdout!.off('data', onData);
        child.stderr!.off('data', onData);
      }
      resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`worker process exited (${code}): ${seen.slice(-2000)}`)));
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
