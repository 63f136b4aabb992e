// 'effect-ledger/worker': the building blocks of workers/main.ts (the `effect-ledger-worker` command), for
// a team that hosts the effect workflow in a worker of its own.
export {
  createDestinations,
  type DestinationSettings,
  type Destinations,
} from '../activities/destinations/registry.js';
export type { EffectMetrics } from '../activities/effect-metrics.js';
export { destinationCredentials, destinationSettings, providerUrl } from './config.js';
export { bundleEffectWorkflows, createEffectWorker, type EffectWorkerOptions, workflowsPath } from './effect-worker.js';
export { jsonLogger } from './json-log.js';
export {
  ensureReconcilerSchedule,
  LEDGER_RECONCILER_SCHEDULE_ID,
  type ReconcilerPassObserver,
} from './ledger-reconciler.js';
export { createWorkerMetrics, serveMetrics, type WorkerMetrics } from './metrics.js';
export { installWorkerRuntime } from './runtime.js';
export { connectWorkerNative } from './temporal-worker-connection.js';
