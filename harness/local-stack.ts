// A real, throwaway stack (one per test file, one per history capture): a Temporal dev server on a
// free port (or a cluster persisted in PostgreSQL: harness/temporal-target.ts), a fresh PostgreSQL database
// with the committed migrations, the provider simulator as its own process, and workers built from the same code the worker process runs. stop() removes it all.
import { randomBytes } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, NativeConnection, Runtime, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
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
import { freePort } from '../stack/free-port.js';
import { dropDatabase, throwawayLedgerUrl } from '../stack/ledger-database.js';
import { claimDatabase } from '../stack/test-databases.js';
import { loadTemporalConfig } from '../workers/config.js';
import { createEffectWorker, type EffectWorkerOptions } from '../workers/effect-worker.js';
import { type SimulatorProcess, startSimulator } from './simulator/client.js';
import { startTemporal } from './temporal-target.js';
import { loadWorkflowBundle, stackDeployment } from './workflow-bundle.js';

// Workers' state changes are noise in test output; warnings and errors still show.
Runtime.install({ logger: new DefaultLogger('WARN') });

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
  /** Where the worker reaches Temporal (default: the stack's own connection): a proxy in front of it, say. */
  temporalAddress?: string;
  /** Other workflow code: another build (its ID is the code's hash), as a deploy of a workflow change makes. */
  workflowBundle?: WorkflowBundleWithSourceMap;
  /** Make its build current once it polls (default true); false leaves the rollout to the test. */
  becomeCurrent?: boolean;
  /** The reconciler's schedule and timer pass beside it (default off), and what counts its passes. */
  reconciler?: EffectWorkerOptions['reconciler'];
  reconcilerObserver?: EffectWorkerOptions['reconcilerObserver'];
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
  /** The clients' attempts run as local activities (EffectLedgerClientOptions.localAttempts). */
  localAttempts?: boolean;
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
  const databaseUrl = throwawayLedgerUrl(purpose);
  bundle ??= loadWorkflowBundle();
  const uiPort = ui ? await freePort() : undefined;
  const [temporal, simulatorStart, migrated] = await Promise.allSettled([
    startTemporal({ config, uiPort, ...(devServerArgs ? { extraArgs: devServerArgs } : {}) }),
    startSimulator(),
    migrateLedger(databaseUrl).then(() => claimDatabase(new URL(databaseUrl).pathname.slice(1))),
  ]);
  if (temporal.status === 'rejected' || simulatorStart.status === 'rejected' || migrated.status === 'rejected') {
    // Half a stack is no use to anyone: stop what did start, and drop the database.
    await Promise.allSettled([
      temporal.status === 'fulfilled' ? temporal.value.teardown() : undefined,
      simulatorStart.status === 'fulfilled' ? simulatorStart.value.stop() : undefined,
    ]);
    await dropDatabase(databaseUrl).catch(() => {});
    throw ([temporal, simulatorStart, migrated].find((r) => r.status === 'rejected') as PromiseRejectedResult).reason;
  }
  const env = temporal.value;
  const simulator = simulatorStart.value;
  const ledger = openLedger(databaseUrl);
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
  /** A worker, and what to close once it stopped (its own connection to Temporal, when it has one). */
  const createWorker = async (options: WorkerOptions = {}) => {
    const own = options.temporalAddress ? await NativeConnection.connect({ address: options.temporalAddress }) : null;
    const code = options.workflowBundle ?? workflowBundle;
    const worker = await createEffectWorker({
      connection: own ?? env.nativeConnection,
      namespace: config.namespace,
      taskQueue,
      workflowBundle: code,
      // The stack's build is its workflow code; it routes new effects as soon as it polls.
      deployment: stackDeployment(code.code, taskQueue),
      becomeCurrent: options.becomeCurrent ?? true,
      db: ledger.db,
      destinations: (options.adapters ?? createDestinations)({
        ...options.destinations,
        providerUrl: options.providerUrl ?? simulator.url,
      }),
      effects,
      ...(options.reconciler ? { reconciler: options.reconciler } : {}),
      ...(options.reconcilerObserver ? { reconcilerObserver: options.reconcilerObserver } : {}),
    });
    return { worker, close: async () => own?.close() };
  };

  return {
    env,
    uiUrl: uiPort ? `http://${config.devServer.ip}:${uiPort}` : undefined,
    ledger,
    databaseUrl,
    simulator,
    taskQueue,
    namespace: config.namespace,
    effects,
    effectsWith: (options) => new TrackingEffectLedgerClient({ ...baseOptions, ...options }, approvedEffectIds),
    approvedEffectIds,
    async withWorker(fn, options) {
      const { worker, close } = await createWorker(options);
      return worker.runUntil(fn()).finally(close);
    },
    async startWorker(options) {
      const { worker, close } = await createWorker(options);
      const running = worker.run();
      return {
        async stop() {
          worker.shutdown();
          await running.finally(close);
        },
      };
    },
    async stop() {
      await Promise.allSettled([env.teardown(), simulator.stop(), ledger.close()]);
      await dropDatabase(databaseUrl);
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
