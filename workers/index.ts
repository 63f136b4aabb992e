// 'effect-ledger/worker': the worker side — the plugin a team adds to a worker it already runs, the built-in
// destinations with their adapters, and the building blocks of workers/main.ts (the `effect-ledger-worker` command).
export {
  builtInDestinations,
  emailSmtpDestination,
  exampleDestinations,
  natsJetStreamDestination,
  ordersSqlDestination,
} from '../activities/destinations/built-in.js';
export {
  createDestinations,
  type DestinationSettings,
  type Destinations,
} from '../activities/destinations/registry.js';
export type { EffectMetrics } from '../activities/effect-metrics.js';
export { destinationCredentials, destinationSettings, providerUrl } from './config.js';
export {
  EFFECT_LEDGER_PLUGIN,
  EffectLedgerPlugin,
  type EffectLedgerPluginOptions,
} from './effect-ledger-plugin.js';
export { bundleEffectWorkflows, createEffectWorker, type EffectWorkerOptions, workflowsPath } from './effect-worker.js';
export { type HostedDestinations, hostDestinations, loadWorkerDestinations } from './hosted-destinations.js';
export { jsonLogger } from './json-log.js';
export {
  ensureReconcilerSchedule,
  LEDGER_RECONCILER_SCHEDULE_ID,
  type ReconcilerPassObserver,
} from './ledger-reconciler.js';
export { createWorkerMetrics, serveMetrics, type WorkerMetrics } from './metrics.js';
export { effectLedgerNexusHandler } from './nexus-service.js';
export { installWorkerRuntime } from './runtime.js';
export {
  EFFECT_SEARCH_ATTRIBUTES,
  MissingSearchAttributesError,
  requireSearchAttributes,
} from './search-attribute-check.js';
export { connectWorkerNative } from './temporal-worker-connection.js';
