// Which Temporal the test harness stands on: the dev server (default), or, with
// EFFECT_LEDGER_TEMPORAL_TARGET=cluster, a Temporal cluster persisted in PostgreSQL (harness/cluster/),
// one per stack like the dev server. Either way callers get a TestWorkflowEnvironment whose teardown()
// stops what was started, so test files run unchanged against both.
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { closeGatePlugin } from '../client/connection-close.js';
import { type DevServerOptions, settleCallsOnTeardown, startDevServer } from '../stack/dev-server.js';
import { loadTemporalConfig } from '../workers/config.js';
import { type Cluster, type ClusterOptions, startCluster } from './cluster/cluster.js';

export const TEMPORAL_TARGET_ENV = 'EFFECT_LEDGER_TEMPORAL_TARGET';

export type TemporalTarget = 'dev-server' | 'cluster';

export function temporalTarget(): TemporalTarget {
  const raw = process.env[TEMPORAL_TARGET_ENV] ?? 'dev-server';
  if (raw !== 'dev-server' && raw !== 'cluster') {
    throw new Error(`${TEMPORAL_TARGET_ENV}=${raw}: expected dev-server or cluster`);
  }
  return raw;
}

const clusters = new WeakMap<TestWorkflowEnvironment, Cluster>();

/** The cluster under an environment startTemporal() made (to kill its server process), if any. */
export function clusterOf(env: TestWorkflowEnvironment): Cluster | undefined {
  return clusters.get(env);
}

/** A TestWorkflowEnvironment on an existing cluster; its teardown() also stops the cluster. */
export async function environmentOnCluster(cluster: Cluster): Promise<TestWorkflowEnvironment> {
  const env = await TestWorkflowEnvironment.createFromExistingServer({
    address: cluster.address,
    namespace: cluster.namespace,
    ...(cluster.connectionOptions.tls ? { connectionOptions: { tls: cluster.connectionOptions.tls } } : {}),
    plugins: [closeGatePlugin],
  });
  settleCallsOnTeardown(env);
  const teardown = env.teardown.bind(env);
  // The SDK's teardown leaves an existing server alone; this one is ours to stop.
  env.teardown = async () => {
    await teardown();
    await cluster.stop();
  };
  clusters.set(env, cluster);
  return env;
}

export async function startTemporal(
  options: DevServerOptions & Pick<ClusterOptions, 'log'> = {},
): Promise<TestWorkflowEnvironment> {
  if (temporalTarget() === 'dev-server') return startDevServer(options);
  const config = options.config ?? loadTemporalConfig();
  const cluster = await startCluster({
    config,
    ...(options.uiPort !== undefined ? { ui: options.uiPort } : {}),
    ...(options.port !== undefined ? { port: options.port } : {}),
    ...(options.log ? { log: options.log } : {}),
  });
  return environmentOnCluster(cluster);
}
