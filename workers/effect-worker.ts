// Builds the worker that hosts the effect workflow and its activities, through the plugin a team would add to a
// worker of its own (effect-ledger-plugin.ts): the process entry (main.ts), the demo and the tests all build it
// here, so they run the same code.
import {
  type BundleOptions,
  bundleWorkflowCode,
  DefaultLogger,
  type NativeConnection,
  Worker,
  type WorkflowBundleOption,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import type { ActivityDeps } from '../activities/index.js';
import type { EffectLedgerClient } from '../client/effect-ledger-client.js';
import { EffectLedgerPlugin, type EffectLedgerPluginOptions } from './effect-ledger-plugin.js';
import type { ReconcilerPassObserver } from './ledger-reconciler.js';
import { type WorkflowCode, workflowsPath, workflowsPathOf } from './workflows-path.js';

export { workflowsPath };

/**
 * Bundles the workflow code once; tests and the demo reuse the bundle across workers. The replay test
 * also bundles deliberately altered copies (another workflows path, or extra interceptor modules).
 */
export function bundleEffectWorkflows(
  options: Partial<Pick<BundleOptions, 'workflowsPath' | 'workflowInterceptorModules' | 'webpackConfigHook'>> & {
    /** Which workflow code (default the current; `v6`, the frozen code that drains pre-versioning effects). */
    code?: WorkflowCode;
  } = {},
): Promise<WorkflowBundleWithSourceMap> {
  const { code, ...bundle } = options;
  return bundleWorkflowCode({ workflowsPath: workflowsPathOf(code), ...bundle, logger: new DefaultLogger('WARN') });
}

export interface EffectWorkerOptions extends Omit<ActivityDeps, 'destinations'> {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  /** The adapters by name, or destinations to connect with `env` (default: the built-ins). */
  destinations?: EffectLedgerPluginOptions['destinations'];
  env?: EffectLedgerPluginOptions['env'];
  /** A bundle made ahead (bundleEffectWorkflows), or its code's path; without one, the worker bundles. */
  workflowBundle?: WorkflowBundleOption;
  /** Identity shown in the Web UI's worker list. */
  identity?: string;
  /** The client the ledger reconciler's activity resumes stranded effects through (default: one of its own). */
  effects?: EffectLedgerClient;
  /** Counts the reconciler activity's passes (the worker process's metrics). */
  reconcilerObserver?: ReconcilerPassObserver;
  /** The worker deployment version (default: TEMPORAL_DEPLOYMENT_NAME and TEMPORAL_WORKER_BUILD_ID). */
  deployment?: EffectLedgerPluginOptions['deployment'];
  /** Make the version current once it polls (development stacks, tests, the demo). */
  becomeCurrent?: boolean;
  /** The workflow code this build runs (default the current). */
  workflowCode?: WorkflowCode;
  /**
   * The reconciler's schedule and local pass beside the worker (the worker process keeps them); default off, so
   * a test's worker never starts a pass of its own.
   */
  reconciler?: EffectLedgerPluginOptions['reconciler'];
  /**
   * On SIGTERM the worker stops polling and gives its running activities this long to finish before it
   * cancels them (default 30 s, a common orchestrator's grace): a send in flight completes and records the
   * provider's answer instead of becoming UNKNOWN.
   */
  shutdownGraceMs?: number;
}

export async function createEffectWorker(options: EffectWorkerOptions): Promise<Worker> {
  const { connection, namespace, taskQueue, identity, shutdownGraceMs, reconciler = false, ...plugin } = options;
  return Worker.create({
    connection,
    namespace,
    taskQueue,
    ...(identity ? { identity } : {}),
    shutdownGraceTime: shutdownGraceMs ?? 30_000,
    plugins: [new EffectLedgerPlugin({ ...plugin, reconciler })],
  });
}
