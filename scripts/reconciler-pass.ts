// `npm run reconciler-pass -- --effects 50000`: how long one ledger reconciler pass takes over N unfinished
// effects, most of them with a running workflow (issue 20, item 4; docs/reconciler.md). One Temporal (the dev
// server, or the cluster with EFFECT_LEDGER_TEMPORAL_TARGET=cluster) and a fresh ledger database.
//
//   - N unfinished effects waiting in UNKNOWN for an hour (ledger rows copied from one approval), each with
//     its workflow started on a task queue nobody polls: running, and cheap to keep;
//   - as many finished (abandoned) effects, which the pass's index leaves out;
//   - at each step a few effects stranded among them (a ledger row, no workflow) and one poison effect first
//     in line (a destination this client does not know: its start always fails).
// The unfinished effects grow in --steps steps up to N; after each, one pass runs and its time and counts are
// printed, then the plan of a ledger page from the middle (EXPLAIN ANALYZE). The workflows this starts are
// never run (nobody polls their queue); the copied effects are never sent.
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import cliProgress from 'cli-progress';
import { Command, InvalidArgumentError } from 'commander';
import { EffectLedgerClient } from '../client/effect-ledger-client.js';
import type { ReconcilerPassReport } from '../client/reconciler-pass.js';
import { startStack } from '../harness/local-stack.js';
import {
  cloneEffects,
  parkWorkflows,
  RETIRED_DESTINATION,
  registerStranded,
  unfinishedRequest,
} from '../harness/unfinished-effects.js';
import { waitFor } from '../harness/wait-for.js';
import { EFFECT_WORKFLOW_TYPE } from '../workflows/contract.js';

const int = (min: number) => (raw: string) => {
  const value = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(value >= min)) throw new InvalidArgumentError(`expected an integer ≥ ${min}`);
  return value;
};

const opts = new Command('reconciler-pass')
  .description('time one ledger reconciler pass over N unfinished effects, most with a running workflow')
  .option('--effects <n>', 'unfinished effects at the last step', int(10), 5000)
  .option('--steps <n>', 'grow to --effects in this many steps, a pass after each', int(1), 4)
  .option('--stranded <n>', 'effects stranded among them at each step (no workflow)', int(0), 5)
  .option('--finished <n>', 'finished effects in the ledger besides (default: as many as --effects)', int(0))
  .option('--page-size <n>', 'the pass page size', int(1), 500)
  .option('--park-concurrency <n>', 'workflow starts in flight while parking', int(1), 32)
  .option(
    '--describe-sample <n>',
    'describes timed one by one, to price "a describe per effect" (0 skips)',
    int(0),
    200,
  )
  .option('--json', 'print the rows as JSON as well')
  .parse()
  .opts<{
    effects: number;
    steps: number;
    stranded: number;
    finished?: number;
    pageSize: number;
    parkConcurrency: number;
    describeSample: number;
    json?: boolean;
  }>();

const log = (line: string) => process.stderr.write(`reconciler-pass: ${line}\n`);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ');

interface Row {
  unfinished: number;
  running: number;
  passMs: number;
  msPer1000: number;
  pages: number;
  described: number;
  resumed: number;
  couldNotStart: number;
  steadyPassMs: number;
  /** The steady pass's time reading the ledger / asking visibility / on candidates. */
  steadySplit: string;
  load: string;
}

const stack = await startStack({ purpose: 'reconciler_pass' });
try {
  const { client } = stack.env;
  const parkedQueue = `parked-${randomBytes(4).toString('hex')}`;
  // Resumed effects park too: this client starts on the queue nobody polls.
  const effects = new EffectLedgerClient({
    client,
    db: stack.ledger.db,
    taskQueue: parkedQueue,
    reconcilerPageSize: opts.pageSize,
  });
  log(`Temporal at ${stack.env.address}, ledger ${stack.databaseUrl}; load average ${load()} (1 / 5 / 15 min)`);

  // The template every copy is made of, and a poison effect first in line (by ID and by age).
  const template = await registerStranded(stack.ledger, unfinishedRequest('bench:template'), {
    stage: 'unknown',
    movedSecondsAgo: 3600,
  });
  await parkWorkflows(client, [template], parkedQueue);
  await registerStranded(stack.ledger, unfinishedRequest('bench:0-poison'), {
    destination: RETIRED_DESTINATION,
    stage: 'unknown',
    movedSecondsAgo: 7200,
  });
  const finished = opts.finished ?? opts.effects;
  if (finished > 0) {
    await cloneEffects(stack.ledger.sql, template, 'bench:done-', finished, { stage: 'abandoned' });
    log(`${finished} finished (abandoned) effects in the ledger besides`);
  }

  const rows: Row[] = [];
  let unfinished = 2; // the template and the poison one
  let running = 1;
  for (let step = 1; step <= opts.steps; step++) {
    const target = Math.round((opts.effects * step) / opts.steps);
    const add = Math.max(0, target - unfinished);
    const ids = await cloneEffects(stack.ledger.sql, template, `bench:s${step}-`, add);
    // A few of them stranded, spread through the ID space; the rest parked.
    const every = opts.stranded > 0 ? Math.max(1, Math.floor(add / opts.stranded)) : Number.POSITIVE_INFINITY;
    const strandedIds = new Set(ids.filter((_, i) => i % every === every - 1).slice(0, opts.stranded));
    const parked = ids.filter((id) => !strandedIds.has(id));
    const bar = new cliProgress.SingleBar(
      {
        format: `step ${step}: parking [{bar}] {value}/{total} {rate} starts/s`,
        hideCursor: true,
        clearOnComplete: true,
      },
      cliProgress.Presets.shades_classic,
    );
    const t0 = performance.now();
    bar.start(parked.length, 0, { rate: '0' });
    await parkWorkflows(client, parked, parkedQueue, {
      concurrency: opts.parkConcurrency,
      onStarted: () =>
        bar.increment(1, {
          rate: ((bar.getProgress() * parked.length) / ((performance.now() - t0) / 1000)).toFixed(0),
        }),
    });
    bar.stop();
    const parkS = (performance.now() - t0) / 1000;
    log(
      `step ${step}: ${parked.length} workflows parked in ${parkS.toFixed(1)} s (${(parked.length / parkS).toFixed(0)}/s)`,
    );
    unfinished += add;
    running += parked.length;
    // Visibility catches up with the starts; otherwise the pass describes (and skips) the ones it lags on.
    await waitFor(
      async () =>
        (
          await client.workflow.count(
            `WorkflowType = '${EFFECT_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running' AND TaskQueue = '${parkedQueue}'`,
          )
        ).count >= running,
      'visibility to show every parked workflow',
      600_000,
    );
    const loadNow = load();
    const report: ReconcilerPassReport = await effects.resumeStranded({ olderThanMs: 0 });
    if (report.couldNotStart !== 1 || report.resumed !== strandedIds.size)
      throw new Error(`step ${step}: unexpected pass ${JSON.stringify(report)}`);
    running += report.resumed;
    // Once more with nothing to resume: the steady state, every pass of every worker.
    const steady = await effects.resumeStranded({ olderThanMs: 0 });
    rows.push({
      unfinished: report.checked,
      running: report.running,
      passMs: report.durationMs,
      msPer1000: Math.round((report.durationMs / report.checked) * 1000),
      pages: report.pages,
      described: report.described,
      resumed: report.resumed,
      couldNotStart: report.couldNotStart,
      steadyPassMs: steady.durationMs,
      steadySplit: `${steady.timings.ledgerMs} / ${steady.timings.visibilityMs} / ${steady.timings.candidatesMs}`,
      load: loadNow,
    });
    log(
      `step ${step}: pass over ${report.checked} unfinished effects in ${report.durationMs} ms (steady ${steady.durationMs} ms)`,
    );
  }

  const header = [
    'unfinished',
    'running',
    'pass ms',
    'ms/1000',
    'pages',
    'described',
    'resumed',
    'could not start',
    'steady pass ms',
    'ledger / visibility / candidates ms',
    'load 1/5/15',
  ];
  const cells = rows.map((r) => [
    r.unfinished,
    r.running,
    r.passMs,
    r.msPer1000,
    r.pages,
    r.described,
    r.resumed,
    r.couldNotStart,
    r.steadyPassMs,
    r.steadySplit,
    r.load,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => String(c[i]).length)));
  const line = (values: (string | number)[]) => values.map((v, i) => String(v).padStart(widths[i] ?? 0)).join('  ');
  process.stdout.write(`\nledger reconciler pass, page size ${opts.pageSize}, ${finished} finished effects besides\n`);
  process.stdout.write(`${line(header)}\n${cells.map(line).join('\n')}\n`);

  if (opts.describeSample > 0) {
    const [{ id }] = (await stack.ledger
      .sql`SELECT min(effect_id) AS id FROM effects WHERE effect_id LIKE 'bench:s1-%'`) as unknown as [{ id: string }];
    const sample = (await stack.ledger
      .sql`SELECT effect_id FROM effects WHERE effect_id >= ${id} AND effect_id LIKE 'bench:s%'
                     ORDER BY effect_id LIMIT ${opts.describeSample}`) as unknown as { effect_id: string }[];
    const t0 = performance.now();
    for (const row of sample) await client.workflow.getHandle(row.effect_id).describe();
    const each = (performance.now() - t0) / sample.length;
    process.stdout.write(
      `\none describe per effect instead: ${each.toFixed(2)} ms each (${sample.length} timed one by one) ≈ ${((each * opts.effects) / 1000).toFixed(1)} s for ${opts.effects}\n`,
    );
  }

  // The plan of one page from the middle, as a pass asks for it (ledger/trail.ts, listUnfinishedEffects).
  const [middle] = (await stack.ledger.sql`SELECT effect_id FROM effects WHERE effect_id LIKE 'bench:s%'
                      ORDER BY effect_id OFFSET ${Math.floor(opts.effects / 2)} LIMIT 1`) as unknown as {
    effect_id: string;
  }[];
  await stack.ledger.sql`ANALYZE effects`;
  const plan = await stack.ledger.sql.unsafe(
    `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) SELECT effect_id, stage FROM effects
       WHERE stage NOT IN ('recorded', 'rejected', 'abandoned') AND effect_id > $1
         AND stage_changed_at < now() - make_interval(secs => 0)
       ORDER BY effect_id LIMIT ${opts.pageSize}`,
    [middle?.effect_id ?? ''],
  );
  process.stdout.write(
    `\nthe plan of a ledger page from the middle:\n${plan.map((r) => `  ${r['QUERY PLAN']}`).join('\n')}\n`,
  );
  if (opts.json) process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
  log(`done; load average ${load()}`);
} finally {
  await stack.stop();
}
