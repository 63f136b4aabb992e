#!/usr/bin/env node
// The worker process: `npm run worker`, or `effect-ledger-worker` from the package. Reaches Temporal as
// every process does (client/temporal-connection.ts: TEMPORAL_* variables, an envconfig profile,
// temporal.yaml). Reads DATABASE_URL (the ledger, as the runtime role), EFFECT_LEDGER_PROVIDER_URL,
// EFFECT_LEDGER_CREDENTIAL_<DESTINATION>[_FILE] (each destination's credential; config.ts),
// EFFECT_LEDGER_RECONCILE_EVERY_MS (default 60000: how soon an effect left without a running workflow is
// resumed), EFFECT_LEDGER_RECONCILE_PAGE_SIZE (default 500: unfinished effects per reconciler page; docs/reconciler.md),
// EFFECT_LEDGER_LOG_LEVEL (default INFO; logs are JSON lines on stdout),
// EFFECT_LEDGER_METRICS_ADDRESS and EFFECT_LEDGER_SDK_METRICS_ADDRESS (host:port of the Prometheus
// endpoints; off when unset), EFFECT_LEDGER_SHUTDOWN_GRACE_MS (default 30000: on SIGTERM, how long running
// activities get to finish). It also makes sure the ledger reconciler's schedule exists. docs/deploy.md.
import type { LogLevel } from '@temporalio/worker';
import { createDestinations } from '../activities/destinations/registry.js';
import { EffectLedgerClient } from '../client/effect-ledger-client.js';
import { connectTemporalClient, describeTarget, resolveTemporalTarget } from '../client/temporal-connection.js';
import { databaseUrl, openLedger } from '../ledger/db.js';
import { destinationSettings } from './config.js';
import { isLostConnection } from './connection-loss.js';
import { createEffectWorker } from './effect-worker.js';
import { ensureReconcilerSchedule, passLogFields } from './ledger-reconciler.js';
import { createWorkerMetrics, serveMetrics } from './metrics.js';
import { installWorkerRuntime } from './runtime.js';
import { connectWorkerNative } from './temporal-worker-connection.js';

const logger = installWorkerRuntime({
  logLevel: (process.env.EFFECT_LEDGER_LOG_LEVEL?.toUpperCase() as LogLevel | undefined) ?? 'INFO',
  sdkMetricsAddress: process.env.EFFECT_LEDGER_SDK_METRICS_ADDRESS,
});

process.on('unhandledRejection', (reason) => {
  if (!isLostConnection(reason)) throw reason;
  logger.warn('ledger connection lost under a query', { code: (reason as { code?: unknown }).code });
});
process.on('uncaughtException', (error) => {
  if (isLostConnection(error)) {
    logger.warn('ledger connection lost outside a query', { error: error.message });
    return;
  }
  // What Node would do without this handler: report and exit (a supervisor restarts the worker).
  logger.error('uncaught exception', { error: error.stack ?? String(error) });
  process.exit(1);
});

const config = resolveTemporalTarget();
const reconcileEveryMs = Number(process.env.EFFECT_LEDGER_RECONCILE_EVERY_MS ?? 60_000);
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
  const effects = new EffectLedgerClient({
    client,
    db: ledger.db,
    taskQueue: config.taskQueue,
    ...(pageSize ? { reconcilerPageSize: Number(pageSize) } : {}),
  });
  await ensureReconcilerSchedule(client, {
    taskQueue: config.taskQueue,
    everyMs: reconcileEveryMs,
    olderThanMs: Math.min(30_000, reconcileEveryMs),
  });
  const worker = await createEffectWorker({
    connection,
    namespace: config.namespace,
    taskQueue: config.taskQueue,
    db: ledger.db,
    destinations: createDestinations(destinationSettings()),
    effects,
    metrics: metrics.effects,
    reconcilerObserver: metrics.reconciler,
    ...(process.env.EFFECT_LEDGER_SHUTDOWN_GRACE_MS
      ? { shutdownGraceMs: Number(process.env.EFFECT_LEDGER_SHUTDOWN_GRACE_MS) }
      : {}),
  });
  // The same pass from every worker process on a timer as well: the schedule is what operators see, but in
  // one chaos seed (4242, with a dev-server restart) no scheduled pass ran at all. Passes are idempotent.
  // One at a time: a pass longer than the period is not joined by another from the same process.
  const olderThanMs = Math.min(30_000, reconcileEveryMs);
  let passing = false;
  const localPass = setInterval(() => {
    if (passing) return;
    passing = true;
    effects
      .resumeStranded({ olderThanMs })
      .then((report) => {
        logger.info('ledger reconciler pass', passLogFields(report, 'timer'));
        metrics.reconciler.passed(report);
      })
      .catch((error: unknown) => {
        logger.warn('ledger reconciler pass failed', { error });
        metrics.reconciler.failed();
      })
      .finally(() => {
        passing = false;
      });
  }, reconcileEveryMs);
  localPass.unref();
  // Worker.run() stops gracefully on SIGINT/SIGTERM (the SDK installs those handlers).
  await worker.run();
  clearInterval(localPass);
} finally {
  await Promise.allSettled([connection.close(), client.connection.close()]);
  await ledger.close();
}
