// The SDK runtime of a worker process, installed once before any connection: the JSON logger (with Core's
// own logs forwarded into it) and, when EFFECT_LEDGER_SDK_METRICS_ADDRESS is set, Core's Prometheus
// endpoint for the SDK's metrics (task latencies, pollers, slots, schedule-to-start).
import { type LogLevel, makeTelemetryFilterString, Runtime } from '@temporalio/worker';
import { jsonLogger } from './json-log.js';

export interface WorkerRuntimeOptions {
  logLevel?: LogLevel;
  /** host:port for the SDK's Prometheus metrics; none when unset. */
  sdkMetricsAddress?: string;
}

export function installWorkerRuntime({ logLevel = 'INFO', sdkMetricsAddress }: WorkerRuntimeOptions = {}) {
  const logger = jsonLogger(logLevel);
  Runtime.install({
    logger,
    telemetryOptions: {
      logging: { filter: makeTelemetryFilterString({ core: 'WARN', other: 'ERROR' }), forward: {} },
      ...(sdkMetricsAddress ? { metrics: { prometheus: { bindAddress: sdkMetricsAddress } } } : {}),
    },
  });
  return logger;
}
