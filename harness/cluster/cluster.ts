// A Temporal cluster on this machine, persisted in PostgreSQL: the server binary (all four services in one
// process) from harness/cluster/temporal-server.yaml, its two databases made by the schema tool, the
// namespace registered with a stated retention, our search attributes registered through the operator
// API, and optionally the standalone Web UI server. Everything binds 127.0.0.1 on free ports. The server
// process can be killed and started again on the same databases (the cluster tests do).
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { msToTs } from '@temporalio/common/lib/time.js';
import { closeTemporalConnection } from '../../client/connection-close.js';
import {
  openTemporalConnection,
  resolveTemporalTarget,
  type TemporalTarget,
} from '../../client/temporal-connection.js';
import { ensureSearchAttributes } from '../../stack/dev-server.js';
import { type Supervised, spawnSupervised } from '../../stack/reaper.js';
import { projectRoot, type TemporalConfig } from '../../workers/config.js';
import { ensureClusterBinaries, serverSchemaDir } from './binaries.js';
import {
  type ClusterDatabases,
  databasesFor,
  dropClusterDatabases,
  migrateClusterDatabases,
  postgresTarget,
} from './databases.js';
import { freeLowPort } from './low-port.js';

const here = resolve(projectRoot, 'harness/cluster');

/** How long closed workflows are kept in the cluster's namespace (production chooses its own). */
export const NAMESPACE_RETENTION_DAYS = 3;

export interface ClusterTls {
  certFile: string;
  keyFile: string;
  /** The CA that signed certFile (the certificate itself when self-signed). */
  caFile: string;
  /** The name the certificate is issued for (what clients verify). */
  serverName: string;
}

export interface ClusterOptions {
  config: Pick<TemporalConfig, 'namespace' | 'searchAttributes'>;
  /** Names the databases temporal_<suffix> and temporal_visibility_<suffix>; random unless given. */
  suffix?: string;
  /** Keep the databases at stop() (`npm run cluster` does, so its history outlives a run). */
  keepDatabases?: boolean;
  /** Serve the Web UI: on this port, or a free one with `true`. */
  ui?: boolean | number;
  /** The frontend's port; a free one unless given. */
  port?: number;
  tls?: ClusterTls;
  /** Where logs and rendered state go; a temp dir unless given. */
  dir?: string;
  adminUrl?: string;
  log?: (line: string) => void;
}

export interface Cluster {
  /** The frontend's host:port. */
  address: string;
  namespace: string;
  uiUrl?: string;
  databases: ClusterDatabases;
  /**
   * The TEMPORAL_* variables a process of ours (worker, CLI, scripts) needs to reach this cluster: the
   * address and namespace, and with TLS the CA that signed the frontend's certificate and the name it is for.
   */
  temporalEnv: Record<string, string>;
  /** temporalEnv resolved by client/temporal-connection.ts, the one connection function every process uses. */
  target: TemporalTarget;
  /** target.connectionOptions: for Connection.connect and NativeConnection.connect alike. */
  connectionOptions: TemporalTarget['connectionOptions'];
  dir: string;
  /** The running server process, or null while it is down. */
  readonly server: Supervised | null;
  /** SIGKILLs the server process (no graceful shutdown: a crash). */
  killServer(): Promise<void>;
  /** Starts the server again, same ports and databases, and waits until it answers. */
  startServer(): Promise<void>;
  stop(): Promise<void>;
}

const defaultAdminUrl = () => process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function waitUntilServing(
  options: TemporalTarget['connectionOptions'],
  server: Supervised,
  timeoutMs = 90_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (server.child.exitCode !== null || server.child.signalCode !== null) {
      throw new Error(`the Temporal server exited while starting:\n${server.output()}`);
    }
    try {
      const connection = await openTemporalConnection({ ...options, connectTimeout: 2000 });
      try {
        await connection.workflowService.getSystemInfo({});
        return;
      } finally {
        await closeTemporalConnection(connection);
      }
    } catch (error) {
      lastError = error;
      await new Promise((done) => setTimeout(done, 500));
    }
  }
  throw new Error(
    `the Temporal server did not answer within ${timeoutMs} ms: ${String(lastError)}\n${server.output()}`,
  );
}

/** Registers the namespace (once) and our search attributes, through the public and operator APIs. */
async function prepareNamespace(target: TemporalTarget, config: ClusterOptions['config']): Promise<void> {
  const connection = await openTemporalConnection(target.connectionOptions);
  try {
    try {
      await connection.workflowService.registerNamespace({
        namespace: config.namespace,
        workflowExecutionRetentionPeriod: msToTs(`${NAMESPACE_RETENTION_DAYS} days`),
        description: 'effect-ledger',
      });
    } catch (error) {
      if (!/already exists/i.test(String(error))) throw error;
    }
    // The namespace becomes visible to the frontend at its next cache refresh (1 s in our dynamic config).
    for (let tries = 0; ; tries++) {
      try {
        await ensureSearchAttributes(connection, {
          namespace: config.namespace,
          searchAttributes: config.searchAttributes,
        });
        break;
      } catch (error) {
        if (tries >= 60) throw error;
        await new Promise((done) => setTimeout(done, 500));
      }
    }
  } finally {
    await closeTemporalConnection(connection);
  }
}

/** The EL_* variables temporal-server.yaml and ui/cluster.yaml are rendered from: free ports, databases, TLS. */
async function serverEnvironment(
  options: Pick<ClusterOptions, 'port' | 'tls' | 'config'>,
  databases: ClusterDatabases,
  adminUrl: string,
): Promise<NodeJS.ProcessEnv> {
  const ports: Record<string, number> = { EL_FRONTEND_PORT: options.port ?? (await freeLowPort()) };
  const others = [
    'FRONTEND_MEMBERSHIP',
    'FRONTEND_HTTP',
    'MATCHING',
    'MATCHING_MEMBERSHIP',
    'HISTORY',
    'HISTORY_MEMBERSHIP',
    'WORKER',
    'WORKER_MEMBERSHIP',
    'METRICS',
  ];
  for (const service of others) ports[`EL_${service}_PORT`] = await freeLowPort();
  const pg = postgresTarget(adminUrl);
  const tls = options.tls;
  return {
    ...process.env,
    ...Object.fromEntries(Object.entries(ports).map(([key, port]) => [key, String(port)])),
    EL_TEMPORAL_ADDRESS: `127.0.0.1:${ports.EL_FRONTEND_PORT}`,
    EL_DB: databases.temporal,
    EL_VISIBILITY_DB: databases.visibility,
    EL_PG_ADDR: `${pg.host}:${pg.port}`,
    EL_PG_USER: pg.user,
    EL_PG_PASSWORD: pg.password,
    EL_DYNAMIC_CONFIG: join(here, 'dynamic-config.yaml'),
    EL_NAMESPACE: options.config.namespace,
    ...(tls
      ? {
          EL_TLS_CERT: tls.certFile,
          EL_TLS_KEY: tls.keyFile,
          EL_TLS_CA: tls.caFile,
          EL_TLS_SERVER_NAME: tls.serverName,
        }
      : {}),
  };
}

/** The TEMPORAL_* variables (client/temporal-connection.ts reads them) that reach a cluster at address. */
export function temporalEnvironment(address: string, namespace: string, tls?: ClusterTls): Record<string, string> {
  return {
    TEMPORAL_ADDRESS: address,
    TEMPORAL_NAMESPACE: namespace,
    ...(tls ? { TEMPORAL_TLS_SERVER_CA_CERT_PATH: tls.caFile, TEMPORAL_TLS_SERVER_NAME: tls.serverName } : {}),
  };
}

export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  const log = options.log ?? (() => {});
  const suffix = options.suffix ?? randomBytes(4).toString('hex');
  const adminUrl = options.adminUrl ?? defaultAdminUrl();
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'effect-cluster-'));
  mkdirSync(dir, { recursive: true });
  const databases = databasesFor(suffix);
  const wantsUi = options.ui !== undefined && options.ui !== false;
  const binaries = await ensureClusterBinaries(
    log,
    wantsUi ? ['server', 'sqlTool', 'uiServer'] : ['server', 'sqlTool'],
  );
  await migrateClusterDatabases({ sqlTool: binaries.sqlTool!, adminUrl, schemaRoot: serverSchemaDir(), databases });

  const env = await serverEnvironment(options, databases, adminUrl);
  const address = env.EL_TEMPORAL_ADDRESS!;
  const temporalEnv = temporalEnvironment(address, options.config.namespace, options.tls);
  // Resolved as every process resolves it, from these variables alone: not the machine's own envconfig file.
  const target = resolveTemporalTarget({
    env: { ...temporalEnv, TEMPORAL_CONFIG_FILE: join(dir, 'no-envconfig.toml') },
  });
  const { connectionOptions } = target;

  let server: Supervised | null = null;
  const startServer = async () => {
    const started = Date.now();
    const child = spawnSupervised(
      binaries.server!,
      // harness/cluster/temporal-server.yaml: the config directory and the "environment" that names the file.
      ['--root', here, '--config', '.', '--env', 'temporal-server', '--allow-no-auth', 'start'],
      { env, cwd: dir, logFile: join(dir, 'server.log') },
    );
    server = child;
    await waitUntilServing(connectionOptions, child);
    log(`Temporal server serving on ${address} (${Math.round((Date.now() - started) / 1000)} s)`);
  };
  let ui: Supervised | undefined;
  let uiUrl: string | undefined;
  const stop = async () => {
    await Promise.allSettled([ui?.stop(), (server as Supervised | null)?.stop()]);
    server = null;
    if (!options.keepDatabases) await dropClusterDatabases(adminUrl, databases).catch(() => {});
    if (!options.dir) rmSync(dir, { recursive: true, force: true });
  };
  try {
    await startServer();
    await prepareNamespace(target, options.config);
    if (wantsUi) {
      const uiPort = typeof options.ui === 'number' ? options.ui : await freeLowPort();
      ui = spawnSupervised(binaries.uiServer!, ['--root', here, '--config', 'ui', '--env', 'cluster', 'start'], {
        env: { ...env, EL_UI_PORT: String(uiPort) },
        cwd: dir,
        logFile: join(dir, 'ui-server.log'),
      });
      uiUrl = `http://127.0.0.1:${uiPort}`;
      await waitForHttp(uiUrl, ui);
    }
  } catch (error) {
    // Half a cluster is no use to anyone: take down what started, and its databases.
    await stop();
    throw error;
  }

  return {
    address,
    namespace: options.config.namespace,
    uiUrl,
    databases,
    temporalEnv,
    target,
    connectionOptions,
    dir,
    get server() {
      return server;
    },
    async killServer() {
      const running = server;
      server = null;
      await running?.stop('SIGKILL');
    },
    async startServer() {
      if (server) throw new Error('the Temporal server is already running');
      await startServer();
    },
    stop,
  };
}

async function waitForHttp(url: string, process: Supervised, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (process.child.exitCode !== null) throw new Error(`the UI server exited:\n${process.output()}`);
    try {
      const response = await fetch(url);
      if (response.status < 500) return;
    } catch {
      // not listening yet
    }
    await new Promise((done) => setTimeout(done, 300));
  }
  throw new Error(`the UI server did not answer on ${url}:\n${process.output()}`);
}
