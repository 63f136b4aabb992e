// Builds the worker that hosts the effect workflow and its activities. The process entry (main.ts),
// the demo and the tests all build it here, so they run the same code.
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type BundleOptions,
  bundleWorkflowCode,
  DefaultLogger,
  type NativeConnection,
  Worker,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import { type ActivityDeps, createActivities } from '../activities/index.js';
import type { EffectLedgerClient } from '../client/effect-ledger-client.js';
import { createReconcilerActivities, type ReconcilerPassObserver } from './ledger-reconciler.js';

// index.ts beside this module's source under tsx; index.js beside the compiled package's module.
export const workflowsPath = fileURLToPath(
  new URL(`../workflows/index${extname(fileURLToPath(import.meta.url))}`, import.meta.url),
);

/**
 * Bundles the workflow code once; tests and the demo reuse the bundle across workers. The replay test
 * also bundles deliberately altered copies (another workflows path, or extra interceptor modules).
 */
export function bundleEffectWorkflows(
  options: Partial<Pick<BundleOptions, 'workflowsPath' | 'workflowInterceptorModules' | 'webpackConfigHook'>> = {},
): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({ workflowsPath, ...options, logger: new DefaultLogger('WARN') });
}

export interface EffectWorkerOptions extends ActivityDeps {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  workflowBundle?: WorkflowBundleWithSourceMap;
  /** Identity shown in the Web UI's worker list. */
  identity?: string;
  /** With a client, the worker also hosts the ledger reconciler's activity (resuming stranded effects). */
  effects?: EffectLedgerClient;
  /** Counts the reconciler activity's passes (the worker process's metrics). */
  reconcilerObserver?: ReconcilerPassObserver;
  /**
   * On SIGTERM the worker stops polling and gives its running activities this long to finish before it
   * cancels them (default 30 s, a common orchestrator's grace): a send in flight completes and records the
   * provider's answer instead of becoming UNKNOWN.
   */
  shutdownGraceMs?: number;
}

export async function createEffectWorker(options: EffectWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    ...(options.identity ? { identity: options.identity } : {}),
    shutdownGraceTime: options.shutdownGraceMs ?? 30_000,
    ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : { workflowsPath }),
    activities: {
      ...createActivities(options),
      ...(options.effects ? createReconcilerActivities(options.effects, options.reconcilerObserver) : {}),
    },
  });
}
