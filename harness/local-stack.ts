// A real, throwaway stack (one per test file, one per history capture): a Temporal dev server on a
// free port (or a cluster persisted in PostgreSQL: harness/temporal-target.ts), a fresh PostgreSQL database
// with the committed migrations, the provider simulator as its own process, and workers built from the same code the worker process runs. stop() removes it all.
import { randomBytes } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import postgres from 'postgres';
import {
  createDestinations,
  type DestinationSettings,
  type Destinations,
} from '../activities/destinations/registry.js';
import {
  type ApprovalResult,
  EffectLedgerClient,
  type EffectLedgerClientOptions,
} from '../client/effect-ledger-client.js';
import { type Ledger, openLedger } from '../ledger/db.js';
import { migrateLedger } from '../ledger/migrate.js';
import { loadTemporalConfig } from '../workers/config.js';
import { bundleEffectWorkflows, createEffectWorker } from '../workers/effect-worker.js';
import { freePort } from './free-port.js';
import { type SimulatorProcess, startSimulator } from './simulator/client.js';
import { startTemporal } from './temporal-target.js';

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
  /**
   * A client like `effects` with other options: a short call timeout only for the effect whose answer
   * a test holds back, say. Its approvals are tracked like those of `effects`.
   */
  effectsWith(options: Partial<Omit<EffectLedgerClientOptions, 'client' | 'db' | 'taskQueue'>>): EffectLedgerClient;
  /** Every effect ID approved through `effects` or `effectsWith` since the last `approvedEffectIds.clear()`. */
  approvedEffectIds: Set<string>;
  /** Runs fn while a worker polls the task queue; the worker stops when fn settles. */
  withWorker<T>(fn: () => Promise<T>, options?: WorkerOptions): Promise<T>;
  /** A worker polling in the background until stop() (for tests where nothing should run at all). */
  startWorker(options?: WorkerOptions): Promise<{ stop(): Promise<void> }>;
  stop(): Promise<void>;
}

export interface WorkerOptions {
  /** Where the worker's adapters send requests (default: the stack's simulator). */
  providerUrl?: string;
  /** The real destinations' settings (email, JetStream, orders database); unset, they have no adapter. */
  destinations?: Omit<DestinationSettings, 'providerUrl'>;
  /** Adapters other than the registry's, from those settings: a deploy that changed one, say. */
  adapters?: (settings: DestinationSettings) => Destinations;
}

/** The backend client, remembering which effect IDs it was asked to approve (for per-test isolation checks). */
class TrackingEffectLedgerClient extends EffectLedgerClient {
  constructor(
    options: EffectLedgerClientOptions,
    private readonly approved: Set<string>,
  ) {
    super(options);
  }

  override approve(request: unknown): Promise<ApprovalResult> {
    const effectId = (request as { effectId?: unknown } | null)?.effectId;
    if (typeof effectId === 'string') this.approved.add(effectId);
    return super.approve(request);
  }
}

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;

export interface StackOptions {
  /** Overrides every destination's call timeout; unset, each destination's own (seconds, generous). */
  callTimeoutMs?: number;
  readbackIntervalMs?: number;
  /** The destinations' absence grace; 0 unless a test exercises it, so "absent" is decidable at once. */
  absenceGraceMs?: number;
  /** The readback cap while a person is awaited; 5 s unless a test exercises the backoff. */
  readbackMaxIntervalMs?: number;
  /** Serve the Temporal Web UI on a free port. */
  ui?: boolean;
  /** Names the throwaway database (effect_ledger_<purpose>_<random>). */
  purpose?: string;
  /** More dev-server arguments (its limits, say); the dev server only, not the cluster target. */
  devServerArgs?: string[];
}

export async function startStack({
  ui,
  purpose = 'test',
  absenceGraceMs = 0,
  readbackMaxIntervalMs = 5000,
  devServerArgs,
  ...clientOptions
}: StackOptions = {}): Promise<Stack> {
  const config = loadTemporalConfig();
  const dbName = `effect_ledger_${purpose}_${randomBytes(5).toString('hex')}`;
  const databaseUrl = new URL(adminUrl);
  databaseUrl.pathname = `/${dbName}`;
  bundle ??= bundleEffectWorkflows();
  const uiPort = ui ? await freePort() : undefined;
  const [env, simulator] = await Promise.all([
    startTemporal({ config, uiPort, ...(devServerArgs ? { extraArgs: devServerArgs } : {}) }),
    startSimulator(),
    migrateLedger(databaseUrl.toString()),
  ]);
  const ledger = openLedger(databaseUrl.toString());
  const taskQueue = `effects-${randomBytes(4).toString('hex')}`;
  const approvedEffectIds = new Set<string>();
  const baseOptions: EffectLedgerClientOptions = {
    client: env.client,
    db: ledger.db,
    taskQueue,
    absenceGraceMs,
    readbackMaxIntervalMs,
    ...clientOptions,
  };
  const effects = new TrackingEffectLedgerClient(baseOptions, approvedEffectIds);
  const workflowBundle = await bundle;
  const createWorker = (options: WorkerOptions = {}) =>
    createEffectWorker({
      connection: env.nativeConnection,
      namespace: config.namespace,
      taskQueue,
      workflowBundle,
      db: ledger.db,
      destinations: (options.adapters ?? createDestinations)({
        ...options.destinations,
        providerUrl: options.providerUrl ?? simulator.url,
      }),
      effects,
    });

  return {
    env,
    uiUrl: uiPort ? `http://${config.devServer.ip}:${uiPort}` : undefined,
    ledger,
    databaseUrl: databaseUrl.toString(),
    simulator,
    taskQueue,
    namespace: config.namespace,
    effects,
    effectsWith: (options) => new TrackingEffectLedgerClient({ ...baseOptions, ...options }, approvedEffectIds),
    approvedEffectIds,
    async withWorker(fn, options) {
      const worker = await createWorker(options);
      return worker.runUntil(fn());
    },
    async startWorker(options) {
      const worker = await createWorker(options);
      const running = worker.run();
      return {
        async stop() {
          worker.shutdown();
          await running;
        },
      };
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
