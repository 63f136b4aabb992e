#!/usr/bin/env node
// The worker process: `npm run worker`, or `effect-ledger-worker` from the package. Reaches Temporal as
// every process does (client/temporal-connection.ts: TEMPORAL_* variables, an envconfig profile,
// temporal.yaml). Reads DATABASE_URL (the ledger, as the runtime role), EFFECT_LEDGER_PROVIDER_URL,
// EFFECT_LEDGER_DESTINATIONS (the destinations modules to load, comma-separated; `built-in` for the ones this
// package ships, the default), EFFECT_LEDGER_CREDENTIAL_<DESTINATION>[_FILE] (each destination's credential),
// EFFECT_LEDGER_RECONCILE_EVERY_MS (default 60000: how soon an effect left without a running workflow is
// resumed), EFFECT_LEDGER_RECONCILE_PAGE_SIZE (default 500: unfinished effects per reconciler page; docs/reconciler.md),
// EFFECT_LEDGER_MAX_CACHED_WORKFLOWS (default 250: workflows kept in the sticky cache, what bounds the worker's
// memory however many effects wait; docs/price-at-scale.md),
// EFFECT_LEDGER_LOG_LEVEL (default INFO; logs are JSON lines on stdout), OTEL_* (traces, off unless they ask;
// docs/tracing.md),
// EFFECT_LEDGER_METRICS_ADDRESS and EFFECT_LEDGER_SDK_METRICS_ADDRESS (host:port of the Prometheus
// endpoints; off when unset), EFFECT_LEDGER_SHUTDOWN_GRACE_MS (default 30000: on SIGTERM, how long running
// activities get to finish), EFFECT_LEDGER_WORKFLOW_BUNDLE (the path of the workflow code bundled ahead of
// time, bundleEffectWorkflows()'s `code` in a file: the worker starts without bundling; unset, it bundles),
// TEMPORAL_DEPLOYMENT_NAME and TEMPORAL_WORKER_BUILD_ID (required: the worker deployment version this worker
// belongs to; effects run pinned to it, docs/versioning.md), EFFECT_LEDGER_WORKFLOW_CODE (`current`, the default,
// or `v6`: the frozen code that drains effects started before Worker Versioning, docs/deploy.md),
// EFFECT_LEDGER_BECOME_CURRENT (1: make this version the deployment's current one once it polls — development
// and tests; a production rollout does it with `temporal worker deployment set-current-version`).
// A thin user of the worker plugin (effect-ledger-plugin.ts), which also keeps the ledger reconciler's
// schedule and local pass beside the worker. docs/deploy.md, docs/your-own-destination.md.
import { type LogLevel, Worker } from '@temporalio/worker';
import { closeTemporalClient } from '../client/connection-close.js';
import { EffectLedgerClient } from '../client/effect-ledger-client.js';
import { connectTemporalClient, describeTarget, resolveTemporalTarget } from '../client/temporal-connection.js';
import { startTracing } from '../client/tracing.js';
import { databaseUrl, openLedger } from '../ledger/db.js';
import { isLostConnection } from './connection-loss.js';
import { deploymentFromEnv, requireDeployment } from './deployment.js';
import { EffectLedgerPlugin } from './effect-ledger-plugin.js';
import { loadWorkerDestinations } from './hosted-destinations.js';
import { createWorkerMetrics, serveMetrics } from './metrics.js';
import { installWorkerRuntime } from './runtime.js';
import { connectWorkerNative } from './temporal-worker-connection.js';
import { isWorkflowCode, WORKFLOW_CODES } from './workflows-path.js';

const logger = installWorkerRuntime({
  logLevel: (process.env.EFFECT_LEDGER_LOG_LEVEL?.toUpperCase() as LogLevel | undefined) ?? 'INFO',
  sdkMetricsAddress: process.env.EFFECT_LEDGER_SDK_METRICS_ADDRESS,
});

const STARTUP_REFUSALS = new Set([
  'WorkerDeploymentError',
  'MissingSearchAttributesError',
  'DestinationDefinitionError',
]);

process.on('unhandledRejection', (reason) => {
  if (!isLostConnection(reason)) throw reason;
  logger.warn('ledger connection lost under a query', { code: (reason as { code?: unknown }).code });
});
process.on('uncaughtException', (error) => {
  if (isLostConnection(error)) {
    logger.warn('ledger connection lost outside a query', { error: error.message });
    return;
  }
  // A refusal to start (no deployment version, missing search attributes, a wrong destinations module) says so
  // in one line: it is the operator's to fix, not a crash.
  if (STARTUP_REFUSALS.has(error.name)) {
    logger.error('cannot start', { reason: error.message, error: error.name });
    process.exit(1);
  }
  // What Node would do without this handler: report and exit (a supervisor restarts the worker).
  logger.error('uncaught exception', { error: error.stack ?? String(error) });
  process.exit(1);
});

const config = resolveTemporalTarget();
// Before anything connects: a worker without its deployment version stops here, naming what is missing.
const deployment = requireDeployment(deploymentFromEnv());
const workflowCode = process.env.EFFECT_LEDGER_WORKFLOW_CODE ?? 'current';
if (!isWorkflowCode(workflowCode))
  throw new Error(`EFFECT_LEDGER_WORKFLOW_CODE must be one of ${WORKFLOW_CODES.join(', ')}, not ${workflowCode}`);
// OTEL_* asking for traces (docs/tracing.md): the SDK, before any client is made; the plugin takes it.
const tracing = await startTracing({ serviceName: 'effect-ledger-worker' });
const reconcileEveryMs = Number(process.env.EFFECT_LEDGER_RECONCILE_EVERY_MS ?? 60_000);
// Loaded before anything connects: a destinations module that is wrong stops the worker with why.
const destinations = await loadWorkerDestinations();
const ledger = openLedger(databaseUrl(), { max: 10 });
const metrics = createWorkerMetrics(ledger.db);
if (process.env.EFFECT_LEDGER_METRICS_ADDRESS) {
  const { address } = await serveMetrics(metrics.registry, process.env.EFFECT_LEDGER_METRICS_ADDRESS);
  logger.info('metrics endpoint listening', { url: `http://${address}/metrics` });
}
logger.info('connecting to Temporal', { target: describeTarget(config) });
const connection = await connectWorkerNative(config);
const client = await connectTemporalClient(config);
try {
  const pageSize = process.env.EFFECT_LEDGER_RECONCILE_PAGE_SIZE;
  const effectLedger = new EffectLedgerPlugin({
    db: ledger.db,
    destinations,
    metrics: metrics.effects,
    effects: new EffectLedgerClient({
      client,
      db: ledger.db,
      taskQueue: config.taskQueue,
      destinations,
      ...(pageSize ? { reconcilerPageSize: Number(pageSize) } : {}),
    }),
    reconciler: { everyMs: reconcileEveryMs },
    deployment,
    workflowCode,
    reconcilerObserver: metrics.reconciler,
    ...(process.env.EFFECT_LEDGER_MAX_CACHED_WORKFLOWS
      ? { maxCachedWorkflows: Number(process.env.EFFECT_LEDGER_MAX_CACHED_WORKFLOWS) }
      : {}),
  });
  const worker = await Worker.create({
    connection,
    namespace: config.namespace,
    taskQueue: config.taskQueue,
    shutdownGraceTime: Number(process.env.EFFECT_LEDGER_SHUTDOWN_GRACE_MS ?? 30_000),
    ...(process.env.EFFECT_LEDGER_WORKFLOW_BUNDLE
      ? { workflowBundle: { codePath: process.env.EFFECT_LEDGER_WORKFLOW_BUNDLE } }
      : {}),
    plugins: [effectLedger],
  });
  // Worker.run() stops gracefully on SIGINT/SIGTERM (the SDK installs those handlers).
  await worker.run();
} finally {
  await Promise.allSettled([connection.close(), closeTemporalClient(client)]);
  await ledger.close();
  await tracing?.shutdown();
}
