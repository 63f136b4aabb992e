// npm run cluster: effect-ledger on a Temporal cluster persisted in PostgreSQL — the Temporal server, the
// standalone Web UI server, the provider simulator, the ledger and three worker processes — until Ctrl-C
// or SIGTERM, which stop them all (and each child exits by itself if this process dies).
//
//   npm run cluster -- [--workers 3] [--port 7233] [--ui-port 8080] [--fresh] [--name cluster]
//
// The cluster's databases (temporal_cluster, temporal_visibility_cluster) and the ledger's
// (effect_ledger_cluster) are kept between runs, like the demo's dev-server file; --fresh drops them first,
// --name another picks other ones (the script's own test runs under a random name).
import { createWriteStream, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import postgres from 'postgres';
import { closeTemporalClient } from '../client/connection-close.js';
import { connectTemporalClient } from '../client/temporal-connection.js';
import { type Cluster, NAMESPACE_RETENTION_DAYS, startCluster } from '../harness/cluster/cluster.js';
import { databasesFor, dropClusterDatabases } from '../harness/cluster/databases.js';
import { type SimulatorProcess, startSimulator } from '../harness/simulator/client.js';
import { startWorkerProcess, type WorkerProcess } from '../harness/worker-process.js';
import { migrateLedger } from '../ledger/migrate.js';
import { freePort } from '../stack/free-port.js';
import { loadTemporalConfig, projectRoot } from '../workers/config.js';
import { ensureReconcilerSchedule } from '../workers/ledger-reconciler.js';

const int = (raw: string) => {
  if (!/^\d+$/.test(raw)) throw new InvalidArgumentError('expected a non-negative integer');
  return Number(raw);
};
const opts = new Command('cluster')
  .option('--workers <n>', 'worker processes', int, 3)
  .option('--port <port>', "the frontend's port (default: temporal.yaml's address, else a free one)", int)
  .option('--ui-port <port>', "the Web UI's port (default 8080, else a free one)", int)
  .option('--fresh', 'drop the cluster and ledger databases first')
  .option('--name <name>', 'names the databases (temporal_<name>, …) and the log folder (.data/<name>)', 'cluster')
  .parse()
  .opts<{ workers: number; port?: number; uiPort?: number; fresh?: boolean; name: string }>();

if (!/^[a-z0-9_]+$/.test(opts.name)) throw new InvalidArgumentError('--name: lower-case letters, digits, _');
const ledgerDb = `effect_ledger_${opts.name}`;
const adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const ledgerUrl = new URL(adminUrl);
ledgerUrl.pathname = `/${ledgerDb}`;
const dir = resolve(projectRoot, '.data', opts.name);
mkdirSync(dir, { recursive: true });
const say = (line: string) => process.stdout.write(`${line}\n`);

/** The port asked for (0: any free one), else the preferred one when it is free, else any free one. */
async function portFor(asked: number | undefined, preferred: number): Promise<number> {
  if (asked === 0) return freePort();
  if (asked !== undefined) return asked;
  const free = await new Promise<boolean>((done) => {
    const probe = createServer()
      .once('error', () => done(false))
      .listen(preferred, '127.0.0.1', () => probe.close(() => done(true)));
  });
  return free ? preferred : freePort();
}

const config = loadTemporalConfig();
let cluster: Cluster | undefined;
let simulator: SimulatorProcess | undefined;
const workers: WorkerProcess[] = [];
let stopping = false;

async function shutdown(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    say('\nStopping: workers (graceful), simulator, UI, Temporal server...');
    // SIGTERM: each worker lets its running activities finish (the SDK's graceful shutdown).
    await Promise.allSettled(
      workers.map(
        (w) =>
          new Promise<void>((done) => {
            if (w.child.exitCode !== null || w.child.signalCode !== null) return done();
            w.child.once('exit', () => done());
            w.child.kill('SIGTERM');
            setTimeout(() => w.child.kill('SIGKILL'), 30_000).unref();
          }),
      ),
    );
    await Promise.allSettled([simulator?.stop(), cluster?.stop()]);
  }
  process.exit(code);
}
process.once('SIGINT', () => void shutdown(0));
process.once('SIGTERM', () => void shutdown(0));
// Run under npm's shell, a SIGTERM may not reach us: when our parent goes, we go too.
const parent = process.ppid;
setInterval(() => process.ppid !== parent && void shutdown(0), 1000).unref();

try {
  if (opts.fresh) {
    say('Dropping the cluster and ledger databases (--fresh)...');
    await dropClusterDatabases(adminUrl, databasesFor(opts.name));
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`DROP DATABASE IF EXISTS "${ledgerDb}" WITH (FORCE)`).finally(() => admin.end());
  }
  const port = await portFor(opts.port, Number(config.address.split(':').at(-1)));
  const uiPort = await portFor(opts.uiPort, 8080);
  say('Starting the Temporal cluster (binaries built first if missing: minutes on a cold Go cache)...');
  const started = Date.now();
  [cluster, simulator] = await Promise.all([
    startCluster({ config, suffix: opts.name, keepDatabases: true, port, ui: uiPort, dir, log: say }),
    startSimulator(),
    migrateLedger(ledgerUrl.toString()),
  ]);
  // The ledger reconciler's schedule is created by each worker; make it here too so it exists before any.
  const client = await connectTemporalClient(cluster.target);
  await ensureReconcilerSchedule(client, { taskQueue: config.taskQueue, everyMs: 60_000, olderThanMs: 30_000 });
  await closeTemporalClient(client);

  const stack = {
    env: { address: cluster.address },
    databaseUrl: ledgerUrl.toString(),
    namespace: config.namespace,
    taskQueue: config.taskQueue,
    simulator: { url: simulator.url },
  };
  // Started side by side: each spends seconds bundling the workflow code.
  const running = await Promise.all(Array.from({ length: opts.workers }, () => startWorkerProcess(stack)));
  for (const [index, worker] of running.entries()) {
    const n = index + 1;
    const log = createWriteStream(resolve(dir, `worker-${n}.log`), { flags: 'a' });
    worker.child.stdout?.pipe(log);
    worker.child.stderr?.pipe(log);
    worker.child.once('exit', (code, signal) => {
      if (!stopping)
        say(`worker ${n} (pid ${worker.child.pid}) exited (${signal ?? code}); see ${dir}/worker-${n}.log`);
    });
    workers.push(worker);
  }

  say(`
Temporal cluster up in ${Math.round((Date.now() - started) / 1000)} s
  frontend      ${cluster.address}  (namespace ${config.namespace}, retention ${NAMESPACE_RETENTION_DAYS} days)
  Web UI        ${cluster.uiUrl}
  databases     ${cluster.databases.temporal}, ${cluster.databases.visibility} (Temporal); ${ledgerDb} (ledger)
  simulator     ${simulator.url}
  workers       ${workers.map((w) => `pid ${w.child.pid}`).join(', ')} on task queue ${config.taskQueue}
  logs          ${dir}/

Approve an effect against it:
  TEMPORAL_ADDRESS=${cluster.address} DATABASE_URL=${ledgerUrl} npm run effect -- --help

Ctrl-C stops everything.`);
} catch (error) {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  await shutdown(1);
}
