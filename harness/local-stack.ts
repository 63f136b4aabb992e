// A real, throwaway stack (one per test file, one per history capture): a Temporal dev server on a
// free port, a fresh PostgreSQL database with the committed migrations, the provider simulator as its
// own process, and workers built from the same code the worker process runs. stop() removes it all.
import { randomBytes } from 'node:crypto';
import { type AddressInfo, createServer } from 'node:net';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import postgres from 'postgres';
import { createDestinations } from '../activities/destinations/registry.js';
import { EffectLedgerClient } from '../client/effect-ledger-client.js';
import { type Ledger, openLedger } from '../ledger/db.js';
import { migrateLedger } from '../ledger/migrate.js';
import { loadTemporalConfig } from '../workers/config.js';
import { bundleEffectWorkflows, createEffectWorker } from '../workers/effect-worker.js';
import { startDevServer } from './dev-server.js';
import { type SimulatorProcess, startSimulator } from './simulator/client.js';

// Workers' state changes are noise in test output; warnings and errors still show.
Runtime.install({ logger: new DefaultLogger('WARN') });

const adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface Stack {
  env: TestWorkflowEnvironment;
  /** The Web UI's base URL when started with { ui: true }. */
  uiUrl?: string;
  ledger: Ledger;
  databaseUrl: string;
  simulator: SimulatorProcess;
  taskQueue: string;
  namespace: string;
  effects: EffectLedgerClient;
  /** Runs fn while a worker polls the task queue; the worker stops when fn settles. */
  withWorker<T>(fn: () => Promise<T>): Promise<T>;
  stop(): Promise<void>;
}

/** A port nothing listens on right now (the dev server binds it a moment later). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;

export interface StackOptions {
  callTimeoutMs?: number;
  readbackIntervalMs?: number;
  /** Serve the Temporal Web UI on a free port. */
  ui?: boolean;
  /** Names the throwaway database (effect_ledger_<purpose>_<random>). */
  purpose?: string;
}

export async function startStack({ ui, purpose = 'test', ...clientOptions }: StackOptions = {}): Promise<Stack> {
  const config = loadTemporalConfig();
  const dbName = `effect_ledger_${purpose}_${randomBytes(5).toString('hex')}`;
  const databaseUrl = new URL(adminUrl);
  databaseUrl.pathname = `/${dbName}`;
  bundle ??= bundleEffectWorkflows();
  const uiPort = ui ? await freePort() : undefined;
  const [env, simulator] = await Promise.all([
    startDevServer({ config, uiPort }),
    startSimulator(),
    migrateLedger(databaseUrl.toString()),
  ]);
  const ledger = openLedger(databaseUrl.toString());
  const taskQueue = `effects-${randomBytes(4).toString('hex')}`;
  const effects = new EffectLedgerClient({ client: env.client, db: ledger.db, taskQueue, ...clientOptions });
  const workflowBundle = await bundle;

  return {
    env,
    uiUrl: uiPort ? `http://${config.devServer.ip}:${uiPort}` : undefined,
    ledger,
    databaseUrl: databaseUrl.toString(),
    simulator,
    taskQueue,
    namespace: config.namespace,
    effects,
    async withWorker(fn) {
      const worker = await createEffectWorker({
        connection: env.nativeConnection,
        namespace: config.namespace,
        taskQueue,
        workflowBundle,
        db: ledger.db,
        destinations: createDestinations({ providerUrl: simulator.url }),
      });
      return worker.runUntil(fn());
    },
    async stop() {
      await Promise.allSettled([env.teardown(), simulator.stop(), ledger.close()]);
      const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
      await admin.unsafe(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).finally(() => admin.end());
    },
  };
}

/** The environment that points a child process (CLI, worker) at this stack. */
export function stackEnvironment(
  stack: Pick<Stack, 'databaseUrl' | 'namespace' | 'taskQueue'> & { env: Pick<Stack['env'], 'address'> },
): NodeJS.ProcessEnv {
  return {
    ...process.env,
    DATABASE_URL: stack.databaseUrl,
    TEMPORAL_ADDRESS: stack.env.address,
    TEMPORAL_NAMESPACE: stack.namespace,
    TEMPORAL_TASK_QUEUE: stack.taskQueue,
  };
}
