// effect-ledger as a Temporal worker plugin: a team adds it to a worker it already runs.
//
//   const effectLedger = new EffectLedgerPlugin({ db: ledger.db, destinations: await loadWorkerDestinations() });
//   const worker = await Worker.create({ connection, namespace, taskQueue, plugins: [effectLedger] });
//   await worker.run();
//
// The worker is versioned (workers/deployment.ts): its deployment name and build ID come from
// TEMPORAL_DEPLOYMENT_NAME and TEMPORAL_WORKER_BUILD_ID (or the `deployment` option, or the worker's own
// `workerDeploymentOptions`), and effects run pinned to the version that started them.
//
// It registers the effect workflow's activities (with the adapters of the destinations this worker hosts) and the
// ledger reconciler's, the Nexus service `effect-ledger` (nexus-service.ts), and the workflows themselves unless the
// worker brings its own bundle or path (which must then `export * from 'effect-ledger/workflows'`). A namespace
// without the workflow's search attributes stops the worker at start (search-attribute-check.ts). Beside the running
// worker (runWorker) it keeps the ledger reconciler's schedule and a local pass on a timer. The task queue is the
// one the clients start effects on.
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
import { activeTracing, type Tracing } from '../client/tracing.js';
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
import {
  becomeCurrentVersion,
  currentVersion,
  type DeploymentVersion,
  deploymentFromEnv,
  deploymentOptions,
  requireDeployment,
  requireVersioningServer,
  versionName,
  WorkerDeploymentError,
} from './deployment.js';
import { hostDestinations } from './hosted-destinations.js';
import {
  createReconcilerActivities,
  ensureReconcilerSchedule,
  passLogFields,
  type ReconcilerPassObserver,
  scheduledPassWatch,
} from './ledger-reconciler.js';
import { effectLedgerNexusHandler } from './nexus-service.js';
import { requireSearchAttributes } from './search-attribute-check.js';
import { traceWorker, tracingActivityInterceptors, tracingSinks } from './tracing.js';
import { type WorkflowCode, workflowsPathOf } from './workflows-path.js';

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
  /**
   * The worker deployment version this worker belongs to (default: TEMPORAL_DEPLOYMENT_NAME and
   * TEMPORAL_WORKER_BUILD_ID in `env`). A worker's own `workerDeploymentOptions` win. Without one, the worker does
   * not start: effects run pinned to the version that started them (docs/versioning.md).
   */
  deployment?: DeploymentVersion;
  /**
   * Make this worker's version the deployment's current one once it polls, as `temporal worker deployment
   * set-current-version` would: for development stacks, tests and the demo. A production rollout promotes (or
   * ramps) a version by hand (docs/deploy.md). Default: EFFECT_LEDGER_BECOME_CURRENT=1 in `env`; otherwise the
   * worker warns when its version is not current.
   */
  becomeCurrent?: boolean;
  /**
   * Which workflow code this build runs: `current` (default), or `v6`, the frozen code of workflow version 6 that
   * drains the effects started before Worker Versioning (docs/deploy.md, "Upgrading from an unversioned worker").
   */
  workflowCode?: WorkflowCode;
  /**
   * Traces (docs/tracing.md): the SDK whose span processor takes the workflows' spans (default: the one
   * startTracing installed in this process, if any); false: none, even then.
   */
  tracing?: Tracing | false;
}

/**
 * The sticky cache's size unless a worker says otherwise: a bound on the worker's memory, whatever the number of
 * waiting effects (the SDK's default grows with the heap, to thousands). A woken effect beyond it replays its
 * history, a few dozen events: milliseconds of CPU, hours apart.
 */
export const DEFAULT_MAX_CACHED_WORKFLOWS = 250;

const readbackRate = (adapter: DestinationAdapter) => adapter.readbackRatePerSecond ?? DEFAULT_READBACK_RATE_PER_SECOND;

/** The plugin's name, as Temporal reports it. */
export const EFFECT_LEDGER_PLUGIN = 'effect-ledger';

interface ConfiguredWorker {
  effects: EffectLedgerClient;
  versioning: NonNullable<WorkerOptions['workerDeploymentOptions']>;
  namespace: string;
  connection: NativeConnection | undefined;
  /** What the destinations' readback queues run: the one-off readback (workflow v6) and the looks (v7). */
  readbacks: Pick<ReturnType<typeof createActivities>, 'readBack' | 'watchForObject'>;
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
    const versioning = this.versioning(options);
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
      versioning,
      namespace,
      connection: options.connection,
      readbacks: { readBack: activities.readBack, watchForObject: activities.watchForObject },
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
    const worker: WorkerOptions = {
      // A send in flight at SIGTERM gets time to finish and record its answer, rather than become UNKNOWN.
      shutdownGraceTime: '30 seconds',
      maxCachedWorkflows: this.settings.maxCachedWorkflows ?? DEFAULT_MAX_CACHED_WORKFLOWS,
      ...configured,
      workerDeploymentOptions: versioning,
      activities: { ...(configured.activities ?? {}), ...ours },
      // Other namespaces and languages approve effects through Nexus (nexus-service.ts, docs/nexus.md).
      nexusServices: [...(configured.nexusServices ?? []), effectLedgerNexusHandler(effects)],
      ...this.workflows(configured),
    };
    return traceWorker(worker, this.tracing);
  }

  /** The SDK the workers' spans go to, if any (workers/tracing.ts). */
  private get tracing(): Tracing | undefined {
    return this.settings.tracing === false ? undefined : (this.settings.tracing ?? activeTracing());
  }

  /** The worker's deployment version: its own options, else the plugin's, else the environment's; never none. */
  private versioning(options: WorkerOptions): NonNullable<WorkerOptions['workerDeploymentOptions']> {
    const own = options.workerDeploymentOptions;
    if (own && !own.useWorkerVersioning)
      throw new WorkerDeploymentError(
        'this worker sets workerDeploymentOptions.useWorkerVersioning to false: effect-ledger runs effects pinned to a worker deployment version (docs/versioning.md)',
      );
    if (own) return own;
    const env = this.settings.env ?? process.env;
    return deploymentOptions(requireDeployment(this.settings.deployment ?? deploymentFromEnv(env)));
  }

  override configureReplayWorker(options: ReplayWorkerOptions): ReplayWorkerOptions {
    const configured = super.configureReplayWorker(options);
    return { ...configured, ...this.workflows(configured), sinks: tracingSinks(undefined, configured.sinks) };
  }

  /**
   * The reconciler's schedule and local pass run beside the worker, and stop with it. Once the last worker of
   * this plugin has stopped, the destinations' connections close (a NATS connection would keep the process up).
   */
  override async runWorker(worker: Worker, next: (w: Worker) => Promise<void>): Promise<void> {
    this.running += 1;
    try {
      // A namespace without the search attributes the workflow sets stops the worker here, naming them.
      await requireSearchAttributes(worker.connection, worker.options.namespace, (why) =>
        Runtime.instance().logger.warn('search attributes not checked', { why }),
      );
      await this.checkVersioning(worker);
      await this.runWithReadbackWorkers(worker, (w) => this.runVersioned(w, next));
    } finally {
      this.running -= 1;
      if (this.running === 0) await this.closeDestinations();
    }
  }

  /** The server must offer Worker Versioning before this worker polls as a version (workers/deployment.ts). */
  private async checkVersioning(worker: Worker): Promise<void> {
    const configured = this.configured.get(worker.options.taskQueue);
    if (!configured?.connection) return;
    await requireVersioningServer(configured.connection.workflowService, configured.namespace);
  }

  /**
   * Runs the worker; meanwhile makes its version current (becomeCurrent) or says, once, when it is not: effects
   * start only on the deployment's current version.
   */
  private async runVersioned(worker: Worker, next: (w: Worker) => Promise<void>): Promise<void> {
    const configured = this.configured.get(worker.options.taskQueue);
    if (!configured?.connection) return next(worker);
    const { connection, namespace, versioning } = configured;
    const logger = Runtime.instance().logger;
    const version = versioning.version;
    const stop = new AbortController();
    const env = this.settings.env ?? process.env;
    const routing =
      (this.settings.becomeCurrent ?? env.EFFECT_LEDGER_BECOME_CURRENT === '1')
        ? becomeCurrentVersion(connection.workflowService, namespace, version, {
            identity: worker.options.identity,
            signal: stop.signal,
          }).then(() => logger.info('effect-ledger version is current', { version: versionName(version) }))
        : currentVersion(connection.workflowService, namespace, version.deploymentName).then((current) => {
            if (current?.buildId !== version.buildId)
              logger.warn('effect-ledger version is not current: new effects start elsewhere until it is', {
                version: versionName(version),
                current: current ? versionName(current) : 'none',
                promote: `temporal worker deployment set-current-version --deployment-name ${version.deploymentName} --build-id ${version.buildId}`,
              });
          });
    const routed = routing.catch((error: unknown) => {
      if (stop.signal.aborted) return;
      logger.error('effect-ledger could not make its version current', { error: (error as Error).message });
      if (worker.getState() === 'RUNNING') worker.shutdown();
    });
    try {
      await next(worker);
    } finally {
      stop.abort(new Error('worker stopped'));
      await routed;
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
          activities: configured.readbacks,
          // Part of the same deployment version: a pinned effect's readbacks run the code of its own build.
          workerDeploymentOptions: configured.versioning,
          maxTaskQueueActivitiesPerSecond: readbackRate(adapter),
          // Half a second of the rate in hand at once: the rest wait in the server's queue, where the first look at
          // an effect goes ahead of repeat looks (task priority). Taken sooner, they would queue for their turns in
          // the ledger (readback_pace), first come first served, and a newcomer would wait behind them.
          maxConcurrentActivityTaskExecutions: Math.max(2, Math.ceil(readbackRate(adapter) / 2)),
          shutdownGraceTime: worker.options.shutdownGraceTime,
          ...(this.tracing ? { interceptors: { activity: tracingActivityInterceptors() } } : {}),
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
    // a pass longer than the period is not joined by another from the same worker. A tick after which the
    // schedule completed a pass stands aside (scheduledPassWatch): the backstop runs only when it is needed.
    const observer = this.settings.reconcilerObserver;
    const scheduled = scheduledPassWatch(effects.temporal);
    let passing = false;
    const localPass = setInterval(() => {
      if (passing) return;
      passing = true;
      scheduled()
        .then(async (watch) => {
          if (watch.standAside) {
            logger.debug('ledger reconciler timer pass stands aside', { completedBySchedule: watch.by });
            observer?.stoodAside?.();
            return;
          }
          const report = await effects.resumeStranded({ olderThanMs });
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
    if (this.settings.workflowBundle) return { workflowBundle: this.settings.workflowBundle };
    return { workflowsPath: workflowsPathOf(this.settings.workflowCode) };
  }
}
