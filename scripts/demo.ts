// The demo: real effects through the real stack, then the Web UI left up to look at.
//   npm run demo              (Ctrl-C stops everything)
//   npm run demo -- --exit    (stop after printing the trails)

import { DefaultLogger, Runtime } from '@temporalio/worker';
import { Command } from 'commander';
import { createDestinations } from '../activities/destinations/registry.js';
import { EffectLedgerClient } from '../client/effect-ledger-client.js';
import { spawnSimulator } from '../harness/simulator/spawn.js';
import { databaseUrl, openLedger } from '../ledger/db.js';
import { EffectConflictError } from '../ledger/errors.js';
import { migrateLedger } from '../ledger/migrate.js';
import { readTrail } from '../ledger/trail.js';
import { formatTrail } from '../ledger/trail-format.js';
import { startConfiguredDevServer } from '../stack/dev-server.js';
import { loadTemporalConfig } from '../workers/config.js';
import { createEffectWorker } from '../workers/effect-worker.js';
import { ensureReconcilerSchedule } from '../workers/ledger-reconciler.js';
import { statusQuery } from '../workflows/contract.js';

const options = new Command('demo')
  .option('--exit', 'stop after printing the trails')
  .option('--tag <tag>', "prefix of this run's effect IDs (default: the time), so each run approves new effects")
  .parse()
  .opts<{ exit?: boolean; tag?: string }>();
const tag = options.tag ?? `demo-${new Date().toISOString().replace(/[-:]/g, '').slice(0, 15)}`;
Runtime.install({ logger: new DefaultLogger('WARN') });

const approvals = [
  {
    note: 'a task for request-17',
    effectId: 'task:request-17',
    destination: 'keyed-api',
    operation: 'task.create',
    payload: { title: 'Prepare preview', request: 'request-17' },
  },
  {
    note: 'the same delivery again (absorbed)',
    effectId: 'task:request-17',
    destination: 'keyed-api',
    operation: 'task.create',
    payload: { title: 'Prepare preview', request: 'request-17' },
  },
  {
    note: 'its look-alike for request-18 (not lost)',
    effectId: 'task:request-18',
    destination: 'keyed-api',
    operation: 'task.create',
    payload: { title: 'Prepare preview', request: 'request-18' },
  },
  {
    note: 'a refund',
    effectId: 'refund:A-1',
    destination: 'keyed-api',
    operation: 'refund.create',
    payload: { charge: 'ch_A1', amount: 4000, currency: 'EUR' },
  },
  {
    note: 'the same refund ID with another amount (conflict)',
    effectId: 'refund:A-1',
    destination: 'keyed-api',
    operation: 'refund.create',
    payload: { charge: 'ch_A1', amount: 4500, currency: 'EUR' },
  },
  {
    note: 'a refund the provider refuses',
    effectId: 'refund:A-2',
    destination: 'keyed-api',
    operation: 'refund.create',
    payload: { charge: 'ch_A2', amount: -5, currency: 'EUR' },
  },
].map((a) => ({
  ...a,
  effectId: `${tag}.${a.effectId}`,
  approvedBy: 'demo@effect-ledger.local',
  authorizationRef: 'DEMO-APPROVAL-1',
}));

const config = loadTemporalConfig();
process.stdout.write(
  `Starting the Temporal dev server on ${config.devServer.ip}:${config.devServer.port} (UI :${config.devServer.uiPort})...\n`,
);
const [env, simulator] = await Promise.all([startConfiguredDevServer(config), spawnSimulator(), migrateLedger()]);
const ledger = openLedger(databaseUrl());
const effects = new EffectLedgerClient({ client: env.client, db: ledger.db, taskQueue: config.taskQueue });
const worker = await createEffectWorker({
  connection: env.nativeConnection,
  namespace: config.namespace,
  taskQueue: config.taskQueue,
  db: ledger.db,
  destinations: createDestinations({ providerUrl: simulator.url }),
  identity: 'effect-ledger-demo',
  effects,
});
// The ledger reconciler: unfinished effects without a running workflow are resumed (see Schedules in the UI).
await ensureReconcilerSchedule(env.client, { taskQueue: config.taskQueue, everyMs: 60_000, olderThanMs: 30_000 });
const running = worker.run();

// Ctrl-C or SIGTERM at any moment, during the approvals too, takes everything down with us.
async function shutdown(): Promise<void> {
  worker.shutdown();
  await running.catch(() => undefined);
  await simulator.stop();
  await ledger.close();
  await env.teardown();
}
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  void shutdown().then(() => process.exit(0));
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
// `npm run demo` runs us under a shell that does not pass SIGTERM on: when our parent goes, we go too.
const parent = process.ppid;
setInterval(() => process.ppid !== parent && stop(), 1000).unref();

process.stdout.write(`Provider simulator at ${simulator.url}\n\n`);
for (const { note, ...request } of approvals) {
  try {
    const approval = await effects.approve(request);
    const result =
      approval.created || !['recorded', 'rejected', 'abandoned'].includes(approval.stage)
        ? await effects.result(request.effectId)
        : approval;
    process.stdout.write(`✔ ${note}: ${approval.created ? 'approved' : 'already approved'} → ${result.stage}\n`);
  } catch (error) {
    const label = error instanceof EffectConflictError ? 'refused (conflict)' : 'failed';
    process.stdout.write(`✘ ${note}: ${label}: ${(error as Error).message}\n`);
  }
}

// One effect left for you: the key-less provider drops the connection before committing, readback proves
// absence, and a destination without keys never retries on its own. It waits in UNKNOWN for a decision.
const stuckId = `${tag}.post:launch`;
await fetch(`${simulator.url}/_control/faults`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ kind: 'fail_before_commit', path: '/social/v1/posts' }),
});
await effects.approve({
  effectId: stuckId,
  destination: 'social-feed',
  operation: 'post.publish',
  payload: { channel: 'linkedin-ru', text: 'effect-ledger is live' },
  approvedBy: 'demo@effect-ledger.local',
  authorizationRef: 'DEMO-APPROVAL-1',
});
const handle = env.client.workflow.getHandle(stuckId);
for (
  let waited = 0;
  waited < 60_000 && !/a human decision|in flight/.test((await handle.query(statusQuery)).awaiting ?? '');
  waited += 200
) {
  await new Promise((resolve) => setTimeout(resolve, 200));
}
process.stdout.write(
  `✔ a post whose request was lost on the way: ${(await handle.query(statusQuery)).stage} — awaits a human\n`,
);

const providerObjects = (await (await fetch(`${simulator.url}/v1/objects?limit=100`)).json()) as { data: unknown[] };
process.stdout.write(`\nObjects at the provider: ${providerObjects.data.length}\n\nLedger trails:\n`);
for (const effectId of [...new Set(approvals.map((a) => a.effectId)), stuckId]) {
  const trail = await readTrail(ledger.db, effectId);
  if (trail) process.stdout.write(`${formatTrail(trail)}\n\n`);
}

const ui = `http://${config.devServer.ip}:${config.devServer.uiPort}/namespaces/${config.namespace}/workflows`;
process.stdout.write(
  [
    `Temporal Web UI: ${ui}`,
    `  filter: EffectStage = "unknown"   → ${stuckId} waits for you (see docs/operators.md):`,
    `  open it, More Actions → Send a Signal → approve-retry, Data: {"actor": "you@example.com", "reason": "checked: not posted"}`,
    `  then: npm run effect -- status ${stuckId}`,
    '',
  ].join('\n'),
);

if (options.exit) {
  await shutdown();
} else {
  process.stdout.write(
    'The UI stays up while this runs. Ctrl-C (or SIGTERM) stops the dev server, the worker and the simulator.\n',
  );
}
