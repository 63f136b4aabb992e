// effect-ledger as a Temporal worker plugin: a team adds it to a worker it already runs.
//
//   const effectLedger = new EffectLedgerPlugin({ db: ledger.db, destinations: await loadWorkerDestinations() });
//   const worker = await Worker.create({ connection, namespace, taskQueue, plugins: [effectLedger] });
//   await worker.run();
//
// It registers the effect workflow's activities (with the adapters of the destinations this worker hosts) and the
// ledger reconciler's, and the workflows themselves unless the worker brings its own bundle or path (which must
// then `export * from 'effect-ledger/workflows'`). Beside the running worker (runWorker) it keeps the ledger
// reconciler's schedule and a local pass on a timer. The task queue is the one the clients start effects on.
import { Client } from '@temporalio/client';
import { SimplePlugin } from '@temporalio/plugin';
import {
  type NativeConnection,
  type ReplayWorkerOptions,
  Runtime,
  Worker,
  type WorkerOptions,
  type WorkflowBundleOption,
} from '@temporalio/worker';
import { builtInDestinations } from '../activities/destinations/built-in.js';
import type { Destinations } from '../activities/destinations/registry.js';
import type { EffectMetrics } from '../activities/effect-metrics.js';
import { createActivities } from '../activities/index.js';
import { EffectLedgerClient } from '../client/effect-ledger-client.js';
import {
  closeAdapter,
  type DestinationCatalog,
  type DestinationContext,
  type KnownDestination,
} from '../domain/destination.js';
import {
  DEFAULT_READBACK_RATE_PER_SECOND,
  type DestinationAdapter,
  readbackTaskQueue,
} from '../domain/destination-contract.js';
import type { LedgerDb } from '../ledger/db.js';
import { hostDestinations } from './hosted-destinations.js';
import {
  createReconcilerActivities,
  ensureReconcilerSchedule,
  passLogFields,
  type ReconcilerPassObserver,
} from './ledger-reconciler.js';
import { workflowsPath } from './workflows-path.js';

export interface EffectLedgerPluginOptions {
  /** The ledger, as the runtime role. */
  db: LedgerDb;
  /**
   * The destinations this worker knows (default: the built-ins), connected with `env`; those that do not connect
   * are known but not hosted here. Or the adapters themselves, already connected, by name.
   */
  destinations?: readonly KnownDestination[] | Destinations;
  /** The environment destinations connect with (default process.env). */
  env?: DestinationContext['env'];
  /** Counters per destination (attempts, outcomes, readbacks, decisions). */
  metrics?: EffectMetrics;
  /** A prebuilt bundle of effect-ledger's workflows, or its code's path (default: bundled at Worker.create). */
  workflowBundle?: WorkflowBundleOption;
  /**
   * The backend client the ledger reconciler resumes stranded effects through (default: one on the worker's own
   * connection, knowing these destinations).
   */
  effects?: EffectLedgerClient;
  /**
   * Beside the running worker: the reconciler's schedule (created once per namespace) and a local pass every
   * `everyMs` (default 60 s), each resuming effects unmoved for `olderThanMs` (default min(30 s, everyMs)).
   * false: neither (the reconciler's activity is still hosted, for a schedule kept elsewhere).
   */
  reconciler?: false | { everyMs?: number; olderThanMs?: number };
  /** Counts the reconciler's passes, scheduled and local (the worker process's metrics). */
  reconcilerObserver?: ReconcilerPassObserver;
  /**
   * Workflows kept in the worker's sticky cache (default DEFAULT_MAX_CACHED_WORKFLOWS; a worker's own
   * `maxCachedWorkflows` wins). Effects waiting in UNKNOWN sleep for hours between readbacks: cached, each holds
   * its workflow state in the worker's memory; evicted, it costs one replay of its history when it wakes.
   * docs/price-at-scale.md.
   */
  maxCachedWorkflows?: number;
}

/**
 * The sticky cache's size unless a worker says otherwise: a bound on the worker's memory, whatever the number of
 * waiting effects (the SDK's default grows with the heap, to thousands). A woken effect beyond it replays its
 * history, a few dozen events: milliseconds of CPU, hours apart.
 */
export const DEFAULT_MAX_CACHED_WORKFLOWS = 250;

/** The plugin's name, as Temporal reports it. */
export const EFFECT_LEDGER_PLUGIN = 'effect-ledger';

interface ConfiguredWorker {
  effects: EffectLedgerClient;
  namespace: string;
  connection: NativeConnection | undefined;
  readBack: ReturnType<typeof createActivities>['readBack'];
}

export class EffectLedgerPlugin extends SimplePlugin {
  private readonly hosted: Destinations;
  /** The adapters this plugin connected (not those it was handed, connected, by name): it closes them. */
  private readonly owned: DestinationAdapter[];
  /** Workers of this plugin running now: the connections close when the last one stops. */
  private running = 0;
  private readonly known: DestinationCatalog;
  private readonly notHosted: string[];
  /** Per task queue: one plugin object may serve several workers. */
  private readonly configured = new Map<string, ConfiguredWorker>();

  constructor(private readonly settings: EffectLedgerPluginOptions) {
    super({ name: EFFECT_LEDGER_PLUGIN });
    const given = settings.destinations ?? builtInDestinations;
    if (Array.isArray(given)) {
      ({
        hosted: this.hosted,
        known: this.known,
        notHosted: this.notHosted,
      } = hostDestinations(given as readonly KnownDestination[], settings.env));
      this.owned = Object.values(this.hosted);
    } else {
      this.hosted = given as Destinations;
      this.known = Object.freeze({ ...this.hosted });
      this.notHosted = [];
      this.owned = [];
    }
  }

  /** The destinations this worker hosts, and those it knows but does not host. */
  get destinations(): { hosted: string[]; notHosted: string[] } {
    return { hosted: Object.keys(this.hosted), notHosted: [...this.notHosted] };
  }

  override configureWorker(options: WorkerOptions): WorkerOptions {
    const configured = super.configureWorker(options);
    const { db, metrics } = this.settings;
    const namespace = options.namespace ?? 'default';
    const effects =
      this.settings.effects ??
      new EffectLedgerClient({
        // A Client on the worker's own native connection: the reconciler starts runs where the worker polls.
        client: new Client({ ...(options.connection ? { connection: options.connection } : {}), namespace }),
        db,
        taskQueue: options.taskQueue,
        destinations: Object.values(this.known),
      });
    const activities = createActivities({ db, destinations: this.hosted, ...(metrics ? { metrics } : {}) });
    this.configured.set(options.taskQueue, {
      effects,
      namespace,
      connection: options.connection,
      readBack: activities.readBack,
    });
    const ours: Record<string, unknown> = {
      ...activities,
      ...createReconcilerActivities(effects, this.settings.reconcilerObserver),
    };
    // The effect workflow schedules its activities by these names: a worker's own activity of the same name would
    // be replaced silently, so it is refused.
    const clash = Object.keys(options.activities ?? {}).filter((name) => Object.hasOwn(ours, name));
    if (clash.length)
      throw new TypeError(
        `effect-ledger's activities ${clash.join(', ')} share a name with this worker's own: rename the worker's, or run effect-ledger on a worker of its own`,
      );
    Runtime.instance().logger.info('effect-ledger destinations', {
      taskQueue: options.taskQueue,
      hosted: Object.keys(this.hosted),
      notHosted: this.notHosted,
    });
    return {
      // A send in flight at SIGTERM gets time to finish and record its answer, rather than become UNKNOWN.
      shutdownGraceTime: '30 seconds',
      maxCachedWorkflows: this.settings.maxCachedWorkflows ?? DEFAULT_MAX_CACHED_WORKFLOWS,
      ...configured,
      activities: { ...(configured.activities ?? {}), ...ours },
      ...this.workflows(configured),
    };
  }

  override configureReplayWorker(options: ReplayWorkerOptions): ReplayWorkerOptions {
    const configured = super.configureReplayWorker(options);
    return { ...configured, ...this.workflows(configured) };
  }

  /**
   * The reconciler's schedule and local pass run beside the worker, and stop with it. Once the last worker of
   * this plugin has stopped, the destinations' connections close (a NATS connection would keep the process up).
   */
  override async runWorker(worker: Worker, next: (w: Worker) => Promise<void>): Promise<void> {
    this.running += 1;
    try {
      await this.runWithReadbackWorkers(worker, next);
    } finally {
      this.running -= 1;
      if (this.running === 0) await this.closeDestinations();
    }
  }

  /** Closes what the connected destinations keep open; a close that fails is logged. */
  private async closeDestinations(): Promise<void> {
    const failed = (await Promise.all(this.owned.map(closeAdapter))).filter((f) => f !== undefined);
    if (failed.length) Runtime.instance().logger.warn('destination connections failed to close', { failed });
  }

  /**
   * Beside the worker, per destination it hosts, a worker on that destination's readback queue, polling at the
   * rate the destination declares (`maxTaskQueueActivitiesPerSecond`: the server enforces it for the queue, so
   * it holds whatever the number of workers). They stop with the worker; one that fails stops it too.
   */
  private async runWithReadbackWorkers(worker: Worker, next: (w: Worker) => Promise<void>): Promise<void> {
    const configured = this.configured.get(worker.options.taskQueue);
    if (!configured) return this.runWithReconciler(worker, next);
    const readbackWorkers = await Promise.all(
      Object.entries(this.hosted).map(([name, adapter]) =>
        Worker.create({
          ...(configured.connection ? { connection: configured.connection } : {}),
          namespace: configured.namespace,
          taskQueue: readbackTaskQueue(worker.options.taskQueue, name),
          identity: `${worker.options.identity} readback ${name}`,
          activities: { readBack: configured.readBack },
          maxTaskQueueActivitiesPerSecond: adapter.readbackRatePerSecond ?? DEFAULT_READBACK_RATE_PER_SECOND,
          shutdownGraceTime: worker.options.shutdownGraceTime,
        }),
      ),
    );
    const stop = (w: Worker) => {
      if (w.getState() === 'RUNNING') w.shutdown();
    };
    let failed: unknown;
    const running = readbackWorkers.map((w) =>
      w.run().catch((error: unknown) => {
        failed ??= error;
        stop(worker);
      }),
    );
    try {
      await this.runWithReconciler(worker, next);
    } finally {
      for (const w of readbackWorkers) stop(w);
      await Promise.all(running);
    }
    if (failed) throw failed;
  }

  /** The reconciler's schedule and local pass run beside the worker, and stop with it. */
  private async runWithReconciler(worker: Worker, next: (w: Worker) => Promise<void>): Promise<void> {
    const { reconciler } = this.settings;
    const configured = this.configured.get(worker.options.taskQueue);
    if (reconciler === false || !configured) return super.runWorker(worker, next);
    const everyMs = reconciler?.everyMs ?? 60_000;
    const olderThanMs = reconciler?.olderThanMs ?? Math.min(30_000, everyMs);
    const logger = Runtime.instance().logger;
    const { effects } = configured;
    try {
      await ensureReconcilerSchedule(effects.temporal, { taskQueue: worker.options.taskQueue, everyMs, olderThanMs });
    } catch (error) {
      // The local pass below still keeps effects moving from this worker.
      logger.warn('ledger reconciler schedule could not be created', { error: (error as Error).message });
    }
    // The same pass from every worker on a timer as well: the schedule is what operators see, but in one chaos
    // seed (4242, with a dev-server restart) no scheduled pass ran at all. Passes are idempotent. One at a time:
    // a pass longer than the period is not joined by another from the same worker.
    const observer = this.settings.reconcilerObserver;
    let passing = false;
    const localPass = setInterval(() => {
      if (passing) return;
      passing = true;
      effects
        .resumeStranded({ olderThanMs })
        .then((report) => {
          logger.info('ledger reconciler pass', passLogFields(report, 'timer'));
          observer?.passed(report);
        })
        .catch((error: unknown) => {
          logger.warn('ledger reconciler pass failed', { error });
          observer?.failed();
        })
        .finally(() => {
          passing = false;
        });
    }, everyMs);
    localPass.unref();
    try {
      await super.runWorker(worker, next);
    } finally {
      clearInterval(localPass);
    }
  }

  /** effect-ledger's workflows, unless the worker brings its own bundle or path (which must include them). */
  private workflows(options: Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'>) {
    if (options.workflowBundle || options.workflowsPath) return {};
    return this.settings.workflowBundle ? { workflowBundle: this.settings.workflowBundle } : { workflowsPath };
  }
}
