// The chaos run's stack: the real pieces, each one something the run can kill. A Temporal dev server on a
// fixed port with a persisted SQLite file (so it can be stopped and started again with its history), a fresh
// PostgreSQL database, the provider simulator, the three real destinations (a Mailpit, a JetStream stream of
// its own, an orders database) behind Toxiproxy, and N worker processes kept alive by a supervisor (a worker
// that dies — SIGKILLed by the run, or on its own — is started again). The workers reach the real
// destinations only through their proxies, configured by the same environment variables a deployment sets.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { Client, type Connection } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import postgres from 'postgres';
import type { Proxy as ToxicProxy } from 'toxiproxy-node-client';
import { closeTemporalConnection } from '../../client/connection-close.js';
import { EffectLedgerClient } from '../../client/effect-ledger-client.js';
import { openTemporalConnection } from '../../client/temporal-connection.js';
import { type Cluster, startCluster } from '../../harness/cluster/cluster.js';
import { type MailpitServer, startMailpit } from '../../harness/mailpit.js';
import { type NatsServer, startNats } from '../../harness/nats.js';
import { type SimulatorProcess, startSimulator } from '../../harness/simulator/client.js';
import { environmentOnCluster, temporalTarget } from '../../harness/temporal-target.js';
import { startWorkerProcess, type WorkerProcess } from '../../harness/worker-process.js';
import { type Ledger, openLedger } from '../../ledger/db.js';
import { migrateLedger } from '../../ledger/migrate.js';
import { startDevServer } from '../../stack/dev-server.js';
import { freePort } from '../../stack/free-port.js';
import { createOrdersDatabase, type OrdersDatabase } from '../../stack/orders-db.js';
import { locateTemporalCli } from '../../stack/temporal-cli.js';
import { claimDatabase } from '../../stack/test-databases.js';
import { startToxiproxy, type ToxiproxyServer } from '../../stack/toxiproxy.js';
import { loadTemporalConfig } from '../../workers/config.js';
import { type DestinationRecords, destinationRecords, realDestinationRecords } from '../audit/destination-records.js';

/** The real destinations' links the run can fault (Toxiproxy proxies between the workers and each server). */
export const REAL_LINKS = ['smtp', 'nats', 'orders'] as const;
export type RealLink = (typeof REAL_LINKS)[number];

const adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Debian's libfaketime (`apt-get install faketime`; scripts/setup.sh): a worker's clock skewed against PostgreSQL. */
export const FAKETIME_LIBRARY = '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1';

/** The absence grace of ChaosStack.effectsShortGrace (a post held in flight commits inside callTimeout + this). */
export const SHORT_GRACE_MS = 6000;

/** The worker slot whose clock the run skews (the other workers keep the machine's). */
export const SKEWED_SLOT = 1;

/** The application_name the workers' ledger connections carry: what pg_terminate_backend aims at. */
export const WORKER_APPLICATION_NAME = 'chaos-worker';

export interface ChaosStackOptions {
  workers: number;
  /** The destination call's timeout the effects get (slow commits are made longer than this). */
  callTimeoutMs: number;
  readbackIntervalMs: number;
  readbacksPerRun: number;
  /** Another worker entry (the broken variants the test keeps); default workers/main.ts. */
  workerEntry?: string;
  workerEnv?: NodeJS.ProcessEnv;
  /**
   * Worker slot SKEWED_SLOT runs this many seconds ahead of PostgreSQL's clock (negative: behind), through
   * libfaketime on its process; 0 or absent: no skew. Set per run (reset) by the chaos run.
   */
  skewSeconds?: number;
  /** Which worker slot is skewed (default SKEWED_SLOT, so the others keep the machine's clock). */
  skewedSlot?: number;
  /**
   * The dev server's `limit.maxIDLength`: an effect whose ID is longer (the ledger takes 128 characters) can
   * never be started on this server (the chaos run's poison effect). Absent: the server's default (1000).
   */
  maxIdLength?: number;
  /** The workers' EFFECT_LEDGER_RECONCILE_PAGE_SIZE: unfinished effects per reconciler page. */
  reconcilerPageSize?: number;
  /** The runner's own ledger connections (default 4; a lane beside others takes fewer). */
  ledgerConnections?: number;
  /** The dev server's `limit.historyCount.suggestContinueAsNew` (events): a long run is told to continue as new soon. */
  suggestContinueAsNewAt?: number;
  /** The absence grace of effectsShortGrace (default SHORT_GRACE_MS): a wider in-flight window for a loaded lane. */
  shortGraceMs?: number;
  log?: (line: string) => void;
}

export class ChaosStack {
  readonly config = loadTemporalConfig();
  readonly namespace = this.config.namespace;
  address = '';
  taskQueue = '';
  databaseUrl = '';
  dbName = '';
  env!: TestWorkflowEnvironment;
  /** The cluster under the run (EFFECT_LEDGER_TEMPORAL_TARGET=cluster); its server process is what restarts. */
  cluster?: Cluster;
  simulator!: SimulatorProcess;
  mailpit!: MailpitServer;
  nats!: NatsServer;
  orders!: OrdersDatabase;
  toxiproxy!: ToxiproxyServer;
  /** The JetStream stream (and subject prefix) of this stack; default duplicate window. */
  stream = `CHAOS_${randomBytes(4).toString('hex')}`;
  subjectPrefix = `chaos_${this.stream.slice(6).toLowerCase()}`;
  readonly proxies = {} as Record<RealLink, { proxy: ToxicProxy; port: number }>;
  connection!: Connection;
  client!: Client;
  ledger!: Ledger;
  effects!: EffectLedgerClient;
  /**
   * The same, but a run continues as new after two readbacks while a person is awaited (decisions re-sent
   * across runs), and every destination's absence grace is 2 s (a person is asked soon).
   */
  effectsShortRuns!: EffectLedgerClient;
  /** The same, but every destination's absence grace is 6 s (an in-flight window of the call timeout plus 6 s). */
  effectsShortGrace!: EffectLedgerClient;
  /** The process IDs the skewed worker had (restarts included): its activities' identity names it. */
  readonly skewedPids = new Set<number>();
  readonly workers: Array<WorkerProcess | null> = [];
  /** Workers that died on their own, with the tail of their output. */
  readonly crashes: Array<{ at: Date; slot: number; exit: string; tail: string }> = [];
  readonly stats = {
    workerKills: 0,
    workerRestarts: 0,
    workerCrashes: 0,
    devServerRestarts: 0,
    pgTerminations: 0,
    networkFaults: 0,
  };
  #port = 0;
  #dir = mkdtempSync(join(tmpdir(), 'effect-chaos-'));
  #stopping = false;
  #pending = new Set<Promise<unknown>>();

  /** Set on a lane (fork()): the stack whose servers it shares. */
  #parent: ChaosStack | undefined;

  constructor(readonly options: ChaosStackOptions) {}

  /**
   * Another lane on this stack's servers, to run beside it: its own database, task queue, provider simulator
   * (its faults and its records are its own) and workers; the Temporal server, Mailpit, NATS, the orders
   * database and Toxiproxy shared. Start it with start(); its stop() stops only what is its own. A lane never
   * restarts the shared Temporal server (RestartDevServer is for the stack that owns it).
   */
  fork(options: Partial<ChaosStackOptions>): ChaosStack {
    const lane = new ChaosStack({ ...this.options, ...options });
    lane.#parent = this;
    lane.stream = this.stream;
    lane.subjectPrefix = this.subjectPrefix;
    return lane;
  }

  /** Whether this stack owns the Temporal server (a lane shares its parent's). */
  get ownsServer(): boolean {
    return !this.#parent;
  }

  private log(line: string) {
    this.options.log?.(line);
  }

  async start(): Promise<void> {
    const parent = this.#parent;
    if (parent) {
      this.simulator = await startSimulator();
      Object.assign(this, {
        address: parent.address,
        env: parent.env,
        mailpit: parent.mailpit,
        nats: parent.nats,
        orders: parent.orders,
        toxiproxy: parent.toxiproxy,
        connection: parent.connection,
        client: parent.client,
      });
      if (parent.cluster) this.cluster = parent.cluster;
      Object.assign(this.proxies, parent.proxies);
      return;
    }
    this.#port = await freePort();
    this.address = `${this.config.devServer.ip}:${this.#port}`;
    const [env, simulator, mailpit, nats, orders, toxiproxy] = await Promise.all([
      this.startServer(),
      startSimulator(),
      startMailpit(),
      startNats(),
      createOrdersDatabase(),
      startToxiproxy(),
    ]);
    Object.assign(this, { env, simulator, mailpit, nats, orders, toxiproxy });
    const jsm = await jetstreamManager(nats.connection);
    await jsm.streams.add({ name: this.stream, subjects: [`${this.subjectPrefix}.>`] });
    const ordersAt = new URL(orders.url);
    const upstreams: Record<RealLink, string> = {
      smtp: `127.0.0.1:${mailpit.smtpPort}`,
      nats: nats.address,
      orders: `${ordersAt.hostname}:${ordersAt.port || 5432}`,
    };
    for (const link of REAL_LINKS)
      this.proxies[link] = await toxiproxy.proxy(`${link}_${this.stream.toLowerCase()}`, upstreams[link]);
    this.connection = await openTemporalConnection({ address: this.address });
    this.client = new Client({ connection: this.connection, namespace: this.namespace });
  }

  private async startServer(): Promise<TestWorkflowEnvironment> {
    if (temporalTarget() === 'cluster') {
      this.cluster = await startCluster({ config: this.config, port: this.#port, log: (line) => this.log(line) });
      return environmentOnCluster(this.cluster);
    }
    const { maxIdLength, suggestContinueAsNewAt } = this.options;
    const dynamic = [
      ...(maxIdLength ? [`limit.maxIDLength=${maxIdLength}`] : []),
      ...(suggestContinueAsNewAt ? [`limit.historyCount.suggestContinueAsNew=${suggestContinueAsNewAt}`] : []),
    ];
    return startDevServer({
      config: this.config,
      port: this.#port,
      dbFilename: join(this.#dir, 'temporal.db'),
      extraArgs: dynamic.flatMap((value) => ['--dynamic-config-value', value]),
    });
  }

  /** A fresh world for one run: a new database, an emptied provider, a new task queue, fresh workers. */
  async reset(tag: string): Promise<void> {
    await this.stopWorkers();
    for (const key of Object.keys(this.stats) as (keyof ChaosStack['stats'])[]) this.stats[key] = 0;
    this.crashes.length = 0;
    await this.ledger?.close();
    if (this.dbName) await this.dropDatabase();
    await fetch(`${this.simulator.url}/_control/reset`, { method: 'POST' });
    this.dbName = `effect_ledger_chaos_${randomBytes(4).toString('hex')}`;
    const url = new URL(adminUrl);
    url.pathname = `/${this.dbName}`;
    this.databaseUrl = url.toString();
    await migrateLedger(this.databaseUrl);
    await claimDatabase(this.dbName, adminUrl);
    const runner = new URL(this.databaseUrl);
    runner.searchParams.set('application_name', 'chaos-runner');
    this.ledger = openLedger(runner.toString(), { max: this.options.ledgerConnections ?? 4 });
    this.taskQueue = `chaos-${tag}`;
    const clientOptions = {
      client: this.client,
      db: this.ledger.db,
      taskQueue: this.taskQueue,
      callTimeoutMs: this.options.callTimeoutMs,
      readbackIntervalMs: this.options.readbackIntervalMs,
      readbacksPerRun: this.options.readbacksPerRun,
    };
    this.effects = new EffectLedgerClient(clientOptions);
    this.effectsShortRuns = new EffectLedgerClient({ ...clientOptions, readbacksPerRun: 2, absenceGraceMs: 2000 });
    this.effectsShortGrace = new EffectLedgerClient({
      ...clientOptions,
      absenceGraceMs: this.options.shortGraceMs ?? SHORT_GRACE_MS,
    });
    this.skewedPids.clear();
    await Promise.all(Array.from({ length: this.options.workers }, (_, slot) => this.startWorker(slot)));
  }

  /** The environment a child process (worker, approver) needs to reach this stack. */
  childEnvironment(applicationName: string): NodeJS.ProcessEnv {
    const url = new URL(this.databaseUrl);
    url.searchParams.set('application_name', applicationName);
    return {
      ...process.env,
      DATABASE_URL: url.toString(),
      TEMPORAL_ADDRESS: this.address,
      TEMPORAL_NAMESPACE: this.namespace,
      TEMPORAL_TASK_QUEUE: this.taskQueue,
      EFFECT_LEDGER_PROVIDER_URL: this.simulator.url,
      // The real destinations, each through its proxy.
      EFFECT_LEDGER_SMTP_URL: `smtp://127.0.0.1:${this.proxies.smtp.port}`,
      EFFECT_LEDGER_MAILPIT_URL: this.mailpit.url,
      EFFECT_LEDGER_NATS_URL: `127.0.0.1:${this.proxies.nats.port}`,
      EFFECT_LEDGER_NATS_STREAM: this.stream,
      EFFECT_LEDGER_NATS_SUBJECT_PREFIX: this.subjectPrefix,
      EFFECT_LEDGER_ORDERS_DATABASE_URL: this.ordersUrlViaProxy(),
    };
  }

  private ordersUrlViaProxy(): string {
    const url = new URL(this.orders.url);
    url.hostname = '127.0.0.1';
    url.port = String(this.proxies.orders.port);
    return url.toString();
  }

  /** Every destination's own records, read at the servers themselves (not through the proxies). */
  destinationRecords(): DestinationRecords[] {
    return [
      ...destinationRecords(this.simulator.url),
      ...realDestinationRecords({
        email: { mailboxUrl: this.mailpit.url },
        jetstream: { servers: this.nats.address, stream: this.stream },
        ordersDatabaseUrl: this.orders.url,
      }),
    ];
  }

  /** One destination's records (what an operator looks at on its dashboard). */
  recordsOf(destination: string): DestinationRecords | undefined {
    return this.destinationRecords().find((r) => r.destination === destination);
  }

  /**
   * A network fault between the workers and one real destination, held `ms` and then healed in the
   * background (the settle phase waits for it): refused (proxy off), latency past the call timeout, answers
   * dropped, the connection reset at the next answer, or cut after a few bytes upstream.
   */
  networkFault(link: RealLink, kind: 'refuse' | 'latency' | 'drop' | 'reset' | 'cut', ms: number): void {
    const { proxy } = this.proxies[link];
    const name = `chaos-${kind}-${this.stats.networkFaults}`;
    const toxic = {
      latency: { type: 'latency', stream: 'downstream', attributes: { latency: this.options.callTimeoutMs * 2 } },
      drop: { type: 'timeout', stream: 'downstream', attributes: { timeout: 0 } },
      reset: { type: 'reset_peer', stream: 'downstream', attributes: { timeout: 0 } },
      cut: { type: 'limit_data', stream: 'upstream', attributes: { bytes: 200 } },
    } as const;
    this.stats.networkFaults++;
    const apply = async () => {
      if (kind === 'refuse') await proxy.update({ listen: proxy.listen, upstream: proxy.upstream, enabled: false });
      else await proxy.addToxic({ name, toxicity: 1, ...toxic[kind] } as Parameters<ToxicProxy['addToxic']>[0]);
      await new Promise((resolve) => setTimeout(resolve, ms));
    };
    const heal = async () => {
      if (kind === 'refuse') await proxy.update({ listen: proxy.listen, upstream: proxy.upstream, enabled: true });
      else
        await this.toxiproxy.client
          .get(proxy.name)
          .then((p) => p.getToxic(name))
          .then((t) => t.remove());
    };
    this.track(
      apply()
        .catch((error) => this.log(`network fault ${kind} on ${link}: ${(error as Error).message}`))
        .finally(() => heal().catch(() => this.toxiproxy.client.reset().catch(() => {}))),
    );
  }

  /** Whether a worker slot's clock is skewed (and libfaketime is there to skew it). */
  skewed(slot: number): boolean {
    return (
      slot === (this.options.skewedSlot ?? SKEWED_SLOT) && !!this.options.skewSeconds && existsSync(FAKETIME_LIBRARY)
    );
  }

  /** libfaketime's environment: wall-clock time offset, monotonic time (timers) left alone. */
  private skewEnvironment(slot: number): NodeJS.ProcessEnv {
    if (!this.skewed(slot)) return {};
    const seconds = this.options.skewSeconds ?? 0;
    return {
      LD_PRELOAD: FAKETIME_LIBRARY,
      FAKETIME: `${seconds >= 0 ? '+' : ''}${seconds}s`,
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    };
  }

  private async startWorker(slot: number): Promise<void> {
    const worker = await startWorkerProcess(
      {
        env: { address: this.address },
        databaseUrl: this.databaseUrl,
        namespace: this.namespace,
        taskQueue: this.taskQueue,
        simulator: { url: this.simulator.url },
      },
      this.simulator.url,
      {
        ...(this.options.workerEntry ? { entry: this.options.workerEntry } : {}),
        // The ledger reconciler compares the ledger with Temporal every 3 s here (a minute by default).
        env: {
          ...this.childEnvironment(WORKER_APPLICATION_NAME),
          EFFECT_LEDGER_RECONCILE_EVERY_MS: '3000',
          ...(this.options.reconcilerPageSize
            ? { EFFECT_LEDGER_RECONCILE_PAGE_SIZE: String(this.options.reconcilerPageSize) }
            : {}),
          ...this.skewEnvironment(slot),
          ...this.options.workerEnv,
        },
      },
    );
    this.workers[slot] = worker;
    if (this.skewed(slot) && worker.child.pid) this.skewedPids.add(worker.child.pid);
    // Keep the tail of what the worker printed: why it died, if it dies on its own.
    let tail = '';
    const keep = (chunk: Buffer) => {
      tail = (tail + chunk.toString()).slice(-8000);
    };
    worker.child.stdout?.on('data', keep);
    worker.child.stderr?.on('data', keep);
    // A worker that dies on its own (not by our hand) is started again, as a process manager would.
    worker.child.once('exit', (code, signal) => {
      if (this.workers[slot] !== worker || this.#stopping) return;
      this.workers[slot] = null;
      this.stats.workerCrashes++;
      this.log(
        `worker ${slot} exited on its own (${signal ?? code}); starting it again. It said: ${tail.trim().split('\n').slice(-40).join(' | ')}`,
      );
      this.crashes.push({ at: new Date(), slot, exit: String(signal ?? code), tail });
      this.track(this.restartWorker(slot, 1000));
    });
  }

  private async restartWorker(slot: number, afterMs: number): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, afterMs));
    if (this.#stopping || this.workers[slot]) return;
    for (let tries = 0; ; tries++) {
      try {
        await this.startWorker(slot);
        this.stats.workerRestarts++;
        return;
      } catch (error) {
        if (this.#stopping || tries >= 5) {
          this.log(`worker ${slot} would not start: ${(error as Error).message.slice(0, 200)}`);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 2000));
      }
    }
  }

  private track(promise: Promise<unknown>) {
    this.#pending.add(promise);
    void promise.finally(() => this.#pending.delete(promise));
  }

  /** SIGKILL a worker; it is started again after `restartAfterMs` (in the background). */
  async killWorker(slot: number, restartAfterMs: number): Promise<void> {
    const index = slot % this.options.workers;
    const worker = this.workers[index];
    if (!worker) return;
    this.workers[index] = null;
    await worker.kill();
    this.stats.workerKills++;
    this.track(this.restartWorker(index, restartAfterMs));
  }

  /**
   * Stops the Temporal dev server and starts it again on the same port and database file; on a cluster,
   * SIGKILLs the server process and starts it again on the same databases.
   */
  async restartDevServer(downMs: number): Promise<void> {
    if (!this.ownsServer) throw new Error('a lane does not restart the Temporal server it shares');
    if (this.cluster) {
      await this.cluster.killServer();
      await new Promise((resolve) => setTimeout(resolve, downMs));
      await this.cluster.startServer();
      this.stats.devServerRestarts++;
      return;
    }
    await this.env.teardown();
    await new Promise((resolve) => setTimeout(resolve, downMs));
    for (let tries = 0; ; tries++) {
      try {
        this.env = await this.startServer();
        break;
      } catch (error) {
        if (tries >= 5) throw error;
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
    this.stats.devServerRestarts++;
  }

  /**
   * A barrier around a run's close: every worker process is stopped (SIGSTOP) while `during` runs, then
   * continued. What a run was about to do (close, take up its next task) waits until the caller has raced it.
   * Held at most `maxMs`, below the activities' timeouts.
   */
  async withWorkersStopped<T>(during: () => Promise<T>, maxMs = 1500): Promise<T> {
    const stopped = this.workers.filter((w): w is WorkerProcess => !!w && w.child.exitCode === null);
    for (const w of stopped) w.child.kill('SIGSTOP');
    const release = () => {
      for (const w of stopped) if (w.child.exitCode === null) w.child.kill('SIGCONT');
    };
    const cap = setTimeout(release, maxMs);
    try {
      return await during();
    } finally {
      clearTimeout(cap);
      release();
    }
  }

  /** The Temporal CLI against this stack's server (an operator's `temporal workflow reset`, say). */
  temporalCli(args: string[]): Promise<{ ok: boolean; output: string }> {
    const cli = locateTemporalCli();
    if (cli.type !== 'existing-path') return Promise.resolve({ ok: false, output: 'no Temporal CLI binary here' });
    return new Promise((resolve) =>
      execFile(
        cli.path,
        [...args, '--address', this.address, '--namespace', this.namespace],
        { timeout: 30_000 },
        (error, stdout, stderr) => resolve({ ok: !error, output: `${stdout}${stderr}`.trim() }),
      ),
    );
  }

  /** pg_terminate_backend on every ledger connection the workers hold. */
  async terminateWorkerConnections(): Promise<number> {
    const rows = await this.ledger.sql<{ ok: boolean }[]>`
      SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
      WHERE datname = ${this.dbName} AND application_name = ${WORKER_APPLICATION_NAME}`;
    this.stats.pgTerminations += rows.length;
    return rows.length;
  }

  /** Waits for the background restarts the run started. */
  async quiesce(): Promise<void> {
    while (this.#pending.size) await Promise.allSettled([...this.#pending]);
  }

  async stopWorkers(): Promise<void> {
    this.#stopping = true;
    await this.quiesce();
    await Promise.all(this.workers.map((w) => w?.kill()));
    this.workers.length = 0;
    this.#stopping = false;
  }

  private async dropDatabase(): Promise<void> {
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`DROP DATABASE IF EXISTS "${this.dbName}" WITH (FORCE)`).finally(() => admin.end());
  }

  async stop(): Promise<void> {
    await this.stopWorkers();
    if (this.#parent) {
      await Promise.allSettled([this.ledger?.close(), this.simulator?.stop()]);
      if (this.dbName && !process.env.CHAOS_KEEP_DATABASE) await this.dropDatabase().catch(() => {});
      rmSync(this.#dir, { recursive: true, force: true });
      return;
    }
    // Temporal first (client/connection-close.ts): a call it cancels may still read the ledger.
    if (this.connection) await closeTemporalConnection(this.connection).catch(() => {});
    await this.ledger?.close().catch(() => {});
    if (this.nats)
      await jetstreamManager(this.nats.connection)
        .then((jsm) => jsm.streams.delete(this.stream))
        .catch(() => {});
    await Promise.allSettled([
      this.env?.teardown(),
      this.simulator?.stop(),
      this.mailpit?.stop(),
      this.nats?.stop(),
      this.orders?.drop(),
      this.toxiproxy?.stop(),
    ]);
    if (this.dbName && !process.env.CHAOS_KEEP_DATABASE) await this.dropDatabase().catch(() => {});
    rmSync(this.#dir, { recursive: true, force: true });
  }
}
