// The demo: real effects landing through the real stack, then the Web UIs left up to look at.
//   npm run demo                               (Ctrl-C or SIGTERM stops everything)
//   npm run demo -- --exit                     (stop after printing the trails)
//   npm run demo -- --screenshots docs/ --exit (retake the docs' screenshots of Mailpit and the Temporal UI)

import { DefaultLogger, Runtime } from '@temporalio/worker';
import { Command } from 'commander';
import { messageIdFor } from '../activities/destinations/email-smtp.js';
import { createDestinations } from '../activities/destinations/registry.js';
import { EffectLedgerClient } from '../client/effect-ledger-client.js';
import { idempotencyKeyFor } from '../domain/idempotency-key.js';
import { type SimulatorProcess, startSimulator } from '../harness/simulator/client.js';
import { databaseUrl, type Ledger, openLedger } from '../ledger/db.js';
import { EffectConflictError } from '../ledger/errors.js';
import { migrateLedger } from '../ledger/migrate.js';
import { readTrail } from '../ledger/trail.js';
import { formatTrail } from '../ledger/trail-format.js';
import { startConfiguredDevServer } from '../stack/dev-server.js';
import { waitFor } from '../stack/wait-for.js';
import { loadTemporalConfig } from '../workers/config.js';
import { buildIdOf } from '../workers/deployment.js';
import { bundleEffectWorkflows, createEffectWorker } from '../workers/effect-worker.js';
import { ensureReconcilerSchedule } from '../workers/ledger-reconciler.js';
import { statusQuery } from '../workflows/contract.js';
import { demoApprovals, lostPost } from './demo/approvals.js';
import { type DemoDestinations, startDemoDestinations } from './demo/real-destinations.js';
import { takeScreenshots } from './demo/screenshots.js';

const options = new Command('demo')
  .option('--exit', 'stop after printing the trails')
  .option('--screenshots <dir>', "save screenshots of Mailpit's UI and the Temporal UI there (the docs' are in docs/)")
  .option('--tag <tag>', "prefix of this run's effect IDs (default: the time), so each run approves new effects")
  .parse()
  .opts<{ exit?: boolean; screenshots?: string; tag?: string }>();
const tag = options.tag ?? `demo-${new Date().toISOString().replace(/[-:]/g, '').slice(0, 15)}`;
const say = (line = '') => process.stdout.write(`${line}\n`);
Runtime.install({ logger: new DefaultLogger('WARN') });

// Ctrl-C or SIGTERM at any moment, during start-up and the approvals too, takes everything down with us.
// (Killed outright, we still leave nothing running: the dev server is reaped, the rest exits with our pipes.)
let env: Awaited<ReturnType<typeof startConfiguredDevServer>> | undefined;
let simulator: SimulatorProcess | undefined;
let real: DemoDestinations | undefined;
let ledger: Ledger | undefined;
let worker: { shutdown(): void; running: Promise<void> } | undefined;
let stopping: Promise<void> | undefined;
function shutdown(): Promise<void> {
  stopping ??= (async () => {
    worker?.shutdown();
    await worker?.running.catch(() => undefined);
    await Promise.allSettled([simulator?.stop(), real?.stop(), ledger?.close()]);
    await env?.teardown();
  })();
  return stopping;
}
const stop = () => void shutdown().then(() => process.exit(0));
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
// `npm run demo` runs us under a shell that may not pass SIGTERM on: when our parent goes, we go too.
const parent = process.ppid;
setInterval(() => process.ppid !== parent && stop(), 1000).unref();

const config = loadTemporalConfig();
say(
  `Starting the Temporal dev server on ${config.devServer.ip}:${config.devServer.port} (UI :${config.devServer.uiPort}), ` +
    'the provider simulator, Mailpit, JetStream and an orders database...',
);
try {
  [env, simulator, real] = await Promise.all([
    startConfiguredDevServer(config),
    startSimulator(),
    startDemoDestinations(tag),
    migrateLedger(),
  ]);
} catch (error) {
  say(`✘ start-up failed: ${(error as Error).message}`);
  if (/mailpit/i.test(String(error)))
    say('  Mailpit: scripts/setup.sh builds it into bin/ with Go (or set MAILPIT_BIN to a mailpit binary).');
  await shutdown();
  process.exit(1);
}
try {
  ledger = openLedger(databaseUrl());
  const clientOptions = { client: env.client, db: ledger.db, taskQueue: config.taskQueue };
  const effects = new EffectLedgerClient(clientOptions);
  const workflowBundle = await bundleEffectWorkflows();
  const effectWorker = await createEffectWorker({
    connection: env.nativeConnection,
    namespace: config.namespace,
    taskQueue: config.taskQueue,
    db: ledger.db,
    destinations: createDestinations({ providerUrl: simulator.url, ...real.settings }),
    identity: 'effect-ledger-demo',
    effects,
    // The demo's own dev server: its build is its workflow code, made current as soon as it polls.
    workflowBundle,
    deployment: { deploymentName: 'effect-ledger', buildId: buildIdOf(workflowBundle.code) },
    becomeCurrent: true,
  });
  worker = { shutdown: () => effectWorker.shutdown(), running: effectWorker.run() };
  // The ledger reconciler: unfinished effects without a running workflow are resumed (see Schedules in the UI).
  await ensureReconcilerSchedule(env.client, { taskQueue: config.taskQueue, everyMs: 60_000, olderThanMs: 30_000 });

  say();
  const approvals = demoApprovals(tag);
  for (const { note, ...request } of approvals) {
    try {
      const approval = await effects.approve(request);
      const result =
        approval.created || !['recorded', 'rejected', 'abandoned'].includes(approval.stage)
          ? await effects.result(request.effectId)
          : approval;
      say(`✔ ${note}: ${approval.created ? 'approved' : 'already approved'} → ${result.stage}`);
    } catch (error) {
      const label = error instanceof EffectConflictError ? 'refused (conflict)' : 'failed';
      say(`✘ ${note}: ${label}: ${(error as Error).message}`);
    }
  }

  // One effect left for you: the key-less feed stores the post but its answer never comes back (held past
  // the call timeout), and a hundred posts by others push it out of the listing readback can see. Nothing
  // there dedupes a second post, so nothing is sent again: it waits in UNKNOWN for a person.
  const lost = lostPost(tag);
  await simulator.fault('delay_after_commit', { path: '/social/v1/posts', delayMs: 60_000 });
  await new EffectLedgerClient({ ...clientOptions, callTimeoutMs: 5000 }).approve(lost);
  const post = await waitFor(
    async () => (await simulator?.socialPosts())?.find((p) => p.metadata?.effect_id === lost.effectId),
    'the post to be stored at the provider',
    120_000,
  );
  await simulator.crowdSocialFeed(100);
  const handle = env.client.workflow.getHandle(lost.effectId);
  const waiting = await waitFor(
    async () => {
      const status = await handle.query(statusQuery);
      return status.awaiting?.includes('a human decision') || ['recorded', 'rejected'].includes(status.stage)
        ? status
        : undefined;
    },
    'the lost post to wait for a person',
    120_000,
  );
  say(`✔ a post whose answer was lost: ${waiting.stage} — ${waiting.awaiting ?? 'nothing awaited'}`);

  say('\nWhat landed at the destinations:');
  say(`keyed API (the simulator, ${simulator.url}): ${(await simulator.objects()).length} object(s)`);
  for (const line of await real.describe()) say(line);
  say('\nLedger trails:');
  for (const effectId of [...new Set(approvals.map((a) => a.effectId)), lost.effectId]) {
    const trail = await readTrail(ledger.db, effectId);
    if (trail) say(`${formatTrail(trail)}\n`);
  }

  const invoiceId = approvals.find((a) => a.operation === 'invoice.send')?.effectId ?? '';
  const [email] = await real.mailpit.messagesWithId(messageIdFor(idempotencyKeyFor(invoiceId, 'email')));
  // `go install` builds a Mailpit whose UI bundle is missing (scripts/build-mailpit.sh explains).
  const mailpitUi = (await fetch(`${real.mailpit.url}/dist/app.js`)).ok;
  const uiUrl = `http://${config.devServer.ip}:${config.devServer.uiPort}`;
  const { runId } = await handle.describe();
  say(
    [
      `Temporal Web UI: ${uiUrl}/namespaces/${config.namespace}/workflows`,
      `  filter EffectStage = "unknown": ${lost.effectId} waits for you (docs/operators.md); its page:`,
      `  ${uiUrl}/namespaces/${config.namespace}/workflows/${encodeURIComponent(lost.effectId)}/${runId}/history`,
      `Mailpit's web UI: ${real.mailpit.url}${email ? `  (the invoice: ${real.mailpit.url}/view/${email.ID})` : ''}`,
      ...(mailpitUi
        ? []
        : [
            `  (this Mailpit was built without its web UI, which shows as a blank page: \`bash scripts/build-mailpit.sh\` builds one with it${email ? `; the invoice as text: ${real.mailpit.url}/view/${email.ID}.txt` : ''})`,
          ]),
      '',
      `The post is there (${post.id}), out of the listing's reach: the provider's dashboard is ${simulator.url}/_control/social-posts`,
      '  decide in the UI: More Actions → Send a Signal → confirm-delivery,',
      `    Data: {"actor": "you@example.com", "reason": "found it on the dashboard", "externalId": "${post.id}"}`,
      `  or: npm run effect -- decide ${lost.effectId} confirm --actor you@example.com --reason "found it" --external-id ${post.id}`,
      `  then: npm run effect -- status ${lost.effectId}`,
      '',
    ].join('\n'),
  );

  if (options.screenshots) {
    if (!email) throw new Error('the invoice email is not in Mailpit: no screenshot of it');
    if (!mailpitUi) throw new Error('this Mailpit serves no web UI: build one with `bash scripts/build-mailpit.sh`');
    if (waiting.stage !== 'unknown') throw new Error(`the lost post is ${waiting.stage}, not waiting in UNKNOWN`);
    const shots = await takeScreenshots(options.screenshots, {
      mailpit: { url: real.mailpit.url, messageId: email.ID, shows: 'Your invoice INV-1001' },
      temporal: { uiUrl, namespace: config.namespace, workflowId: lost.effectId, runId },
    });
    say(`Screenshots: ${shots.join(', ')}\n`);
  }

  if (options.exit) {
    // Exit, not drain: the JetStream adapter keeps its connection open for the worker's life.
    await shutdown();
    process.exit(0);
  } else {
    say(
      'Everything stays up while this runs. Ctrl-C (or SIGTERM) stops the dev server, the worker, the simulator, Mailpit and the rest.',
    );
  }
} catch (error) {
  say(`✘ ${(error as Error).message}`);
  await shutdown();
  process.exit(1);
}
