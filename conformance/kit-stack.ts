// The kit's own throwaway stack: a Temporal dev server, a ledger database, Toxiproxy, a database for the
// carriers' notes, and (once the destinations are known) one worker hosting them and a client like the one
// backend code uses, both given the destinations as any worker and client are. Everything is tied to this
// process and removed by stop().
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, makeTelemetryFilterString, Runtime, type Worker } from '@temporalio/worker';
import { EffectLedgerClient } from '../client/effect-ledger-client.js';
import type { Destination } from '../domain/destination.js';
import { readbackTaskQueue } from '../domain/destination-contract.js';
import { createLedgerDatabase, databaseAdminUrl, type LedgerDatabase } from '../stack/ledger-database.js';
import { createOrdersDatabase, type OrdersDatabase } from '../stack/orders-db.js';
import { startToxiproxy, type ToxiproxyServer } from '../stack/toxiproxy.js';
import { loadTemporalConfig } from '../workers/config.js';
import { buildIdOf, versionRoutable } from '../workers/deployment.js';
import { bundleEffectWorkflows, createEffectWorker } from '../workers/effect-worker.js';
import { type KitProxies, startKitProxies } from './kit-proxies.js';
import { type QuietDevServer, startQuietDevServer } from './quiet-dev-server.js';

export interface KitStackOptions {
  callTimeoutMs: number;
  /** Unset: every destination's own absence grace. */
  absenceGraceMs?: number;
  adminUrl?: string;
}

export interface KitStack {
  env: TestWorkflowEnvironment;
  ledger: LedgerDatabase;
  notes: OrdersDatabase;
  toxiproxy: ToxiproxyServer;
  /** The kit's own proxies: a provider's shape, a held request. */
  proxies: KitProxies;
  /** The dev server's output (banner and logs), kept out of the kit's own; undefined when it printed instead. */
  devServerLog?: string;
  /** The client approvals go through (once host() has run). */
  readonly effects: EffectLedgerClient;
  /** The client, validating against these destinations, and the one worker, hosting them. */
  host(destinations: readonly Destination[]): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Worker state changes are noise in the kit's output, and so are the warnings its faults cause on purpose (an
 * activity that outlived its timeout completing late); a runtime the caller installed first is kept.
 */
function quietRuntime(): void {
  try {
    Runtime.install({
      logger: new DefaultLogger('ERROR'),
      telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'ERROR' }), forward: {} } },
    });
  } catch {
    // already installed by the caller (a test's stack): theirs stays
  }
}

export async function startKitStack(options: KitStackOptions): Promise<KitStack> {
  quietRuntime();
  const adminUrl = options.adminUrl ?? databaseAdminUrl();
  const config = loadTemporalConfig();
  const bundle = bundleEffectWorkflows();
  const logFile = join(mkdtempSync(join(tmpdir(), 'effect-ledger-conformance-')), 'dev-server.log');
  const started = await Promise.allSettled([
    startQuietDevServer(config, logFile),
    createLedgerDatabase('conformance', adminUrl),
    createOrdersDatabase(),
    startToxiproxy({ metrics: true }),
    startKitProxies(),
  ] as const);
  const failed = started.find((s) => s.status === 'rejected');
  if (failed) {
    // What did start goes again: a half-built stack must not keep the caller's process alive.
    const [e, l, n, x, p] = started.map((s) => (s.status === 'fulfilled' ? s.value : undefined)) as [
      QuietDevServer | undefined,
      LedgerDatabase | undefined,
      OrdersDatabase | undefined,
      ToxiproxyServer | undefined,
      KitProxies | undefined,
    ];
    await Promise.allSettled([e?.stop(), l?.drop(), n?.drop(), x?.stop(), p?.stop()]);
    throw failed.reason;
  }
  const [temporal, ledger, notes, toxiproxy, proxies] = started.map(
    (s) => (s as PromiseFulfilledResult<unknown>).value,
  ) as [QuietDevServer, LedgerDatabase, OrdersDatabase, ToxiproxyServer, KitProxies];
  const taskQueue = `conformance-${randomBytes(4).toString('hex')}`;
  let effects: EffectLedgerClient | undefined;
  let worker: { instance: Worker; running: Promise<void> } | undefined;
  const { env } = temporal;
  return {
    env,
    ledger,
    notes,
    toxiproxy,
    proxies,
    ...(temporal.logFile ? { devServerLog: temporal.logFile } : {}),
    get effects() {
      if (!effects) throw new Error('the kit has no client before host()');
      return effects;
    },
    async host(destinations) {
      effects = new EffectLedgerClient({
        client: env.client,
        db: ledger.ledger.db,
        taskQueue,
        destinations,
        callTimeoutMs: options.callTimeoutMs,
        ...(options.absenceGraceMs === undefined ? {} : { absenceGraceMs: options.absenceGraceMs }),
        // A person is awaited often here (the kit is that person): read back every second or two meanwhile.
        readbackIntervalMs: 1000,
        readbackMaxIntervalMs: 2000,
      });
      const workflowBundle = await bundle;
      const deployment = { deploymentName: 'effect-ledger-conformance', buildId: buildIdOf(workflowBundle.code) };
      const instance = await createEffectWorker({
        connection: env.nativeConnection,
        namespace: config.namespace,
        taskQueue,
        workflowBundle,
        // The kit's own Temporal: its build is its workflow code, current as soon as it polls.
        deployment,
        becomeCurrent: true,
        db: ledger.ledger.db,
        destinations,
        // Connected as they are: nothing of the kit's own process environment reaches them.
        env: {},
        effects,
        shutdownGraceMs: 1000,
      });
      worker = { instance, running: instance.run() };
      // No cell starts before the server dispatches every kind of task the worker polls for: a registration the
      // dev server takes a minute over (a loaded machine) would leave the cells' effects waiting unexplained.
      const stopped = worker.running.then(() => {
        throw new Error("the kit's worker stopped before its version was routable");
      });
      await Promise.race([
        versionRoutable(env.connection.workflowService, config.namespace, deployment, [
          { name: taskQueue, workflow: true, activity: true },
          ...destinations.map((d) => ({
            name: readbackTaskQueue(taskQueue, d.contract.name),
            workflow: false,
            activity: true,
          })),
        ]),
        stopped,
      ]);
      stopped.catch(() => {});
    },
    async stop() {
      if (worker) {
        worker.instance.shutdown();
        await worker.running.catch(() => {});
      }
      await Promise.allSettled([temporal.stop(), toxiproxy.stop(), proxies.stop(), notes.drop(), ledger.drop()]);
    },
  };
}
