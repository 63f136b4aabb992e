// Benchmark: N happy-path effects through the real stack (dev server, PostgreSQL, simulator, worker).
// Prints SQL statements per effect (approval side and worker side), approve→recorded latency, and
// history events per effect. Numbers, not assertions: `npm run bench -- --effects 50`.
import { randomBytes } from 'node:crypto';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { Command } from 'commander';
import postgres from 'postgres';
import { createDestinations } from '../activities/destinations/registry.js';
import { EffectLedgerClient } from '../client/effect-ledger-client.js';
import { startDevServer } from '../harness/dev-server.js';
import { spawnSimulator } from '../harness/simulator/spawn.js';
import { openLedger } from '../ledger/db.js';
import { migrateLedger } from '../ledger/migrate.js';
import { loadTemporalConfig } from '../workers/config.js';
import { createEffectWorker } from '../workers/effect-worker.js';

const { effects: count } = new Command('bench')
  .option('--effects <n>', 'how many effects', (v) => Number.parseInt(v, 10), 20)
  .parse()
  .opts<{ effects: number }>();
Runtime.install({ logger: new DefaultLogger('WARN') });

const adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const dbName = `effect_ledger_bench_${randomBytes(4).toString('hex')}`;
const url = new URL(adminUrl);
url.pathname = `/${dbName}`;

const config = loadTemporalConfig();
const [env, simulator] = await Promise.all([
  startDevServer({ config }),
  spawnSimulator(),
  migrateLedger(url.toString()),
]);
const statements = { approval: 0, worker: 0 };
const clientLedger = openLedger(url.toString(), { onStatement: () => statements.approval++ });
const workerLedger = openLedger(url.toString(), { onStatement: () => statements.worker++ });
const taskQueue = `bench-${randomBytes(3).toString('hex')}`;
const effects = new EffectLedgerClient({ client: env.client, db: clientLedger.db, taskQueue });
const worker = await createEffectWorker({
  connection: env.nativeConnection,
  namespace: config.namespace,
  taskQueue,
  db: workerLedger.db,
  destinations: createDestinations({ providerUrl: simulator.url }),
});

const latencies: number[] = [];
let events = 0;
await worker.runUntil(async () => {
  for (let i = 0; i < count; i++) {
    const effectId = `bench:${i}`;
    const started = performance.now();
    await effects.approve({
      effectId,
      destination: 'keyed-api',
      operation: 'task.create',
      payload: { title: 'Prepare preview', request: `request-${i}` },
      approvedBy: 'bench',
      authorizationRef: 'BENCH',
    });
    await effects.result(effectId);
    latencies.push(performance.now() - started);
    events += (await env.client.workflow.getHandle(effectId).fetchHistory()).events?.length ?? 0;
  }
});

latencies.sort((a, b) => a - b);
const pct = (p: number) =>
  (latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? Number.NaN).toFixed(0);
process.stdout.write(
  `${[
    `effects: ${count}`,
    `SQL statements per effect: approval ${(statements.approval / count).toFixed(1)}, worker ${(statements.worker / count).toFixed(1)}, total ${((statements.approval + statements.worker) / count).toFixed(1)}`,
    `approve → recorded latency ms: p50 ${pct(50)}, p90 ${pct(90)}, max ${pct(100)}`,
    `history events per effect: ${(events / count).toFixed(1)}`,
  ].join('\n')}\n`,
);

await Promise.allSettled([clientLedger.close(), workerLedger.close(), simulator.stop(), env.teardown()]);
const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
await admin.unsafe(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).finally(() => admin.end());
