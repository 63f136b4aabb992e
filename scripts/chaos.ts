// npm run chaos: generated steps against the real stack — approvals (duplicates at the same moment, the same
// ID with other parameters, bad input), every provider fault the simulator has, worker SIGKILLs, a Temporal
// dev-server restart, pg_terminate_backend, an approver killed between the ledger write and the workflow
// start, runs terminated from the outside, human decisions — then a settle phase that only waits, then the
// invariants. Prints each seed; a failing seed prints its (shrunk) step list and how to replay it.
//
//   npm run chaos -- [--effects 40] [--kills 2] [--seeds 1] [--seed S [--path P]] [--mix full] [--quick]
import { Command, InvalidArgumentError } from 'commander';
import { MIXES } from './chaos/generator.js';
import { drawnSteps, formatTable, runChaos, summarize, tableRow, violationsOf } from './chaos/run.js';

function int(raw: string): number {
  if (!/^\d+$/.test(raw)) throw new InvalidArgumentError('expected a non-negative integer');
  return Number(raw);
}

const opts = new Command('chaos')
  .description('model-based chaos run against the real stack, with invariants checked at the end')
  .option('--effects <n>', 'effects approved per run', int)
  .option('--kills <n>', 'worker SIGKILLs per run at most', int)
  .option('--seeds <n>', 'how many seeds to run', int, 1)
  .option('--seed <n>', 'the (first) seed: replay one, or start --seeds from it', int)
  .option('--path <path>', "fast-check's path of a shrunk counterexample (with --seed)")
  .option('--workers <n>', 'worker processes', int, 2)
  .option('--dev-restarts <n>', 'Temporal dev-server restarts per run at most', int)
  .option('--dies <n>', 'approvers killed after the ledger write per run at most', int)
  .option('--terminations <n>', 'runs terminated from the outside per run at most', int)
  .option('--call-timeout-ms <ms>', "the destinations' call timeout during the run", int, 2000)
  .option('--settle-seconds <s>', 'how long to wait at most for effects to settle', int)
  .option('--reconcile-seconds <s>', 'how long effects with no running workflow are given to be resumed', int)
  .option('--shrink-seconds <s>', 'time budget per seed, shrinking a failure included (0: no shrinking)', int)
  .option('--mix <name>', `the generator's mix: ${Object.keys(MIXES).join(', ')}`, 'full')
  .option(
    '--skew-seconds <s>',
    "the skewed worker's clock offset against PostgreSQL (default: 3–8 s ahead, from the seed; 0: none)",
    (raw) => {
      if (!/^-?\d+$/.test(raw)) throw new InvalidArgumentError('expected an integer');
      return Number(raw);
    },
  )
  .option(
    '--page-fill <n>',
    'unfinished effects parked before a stranded one: the reconciler page plus one (0: off)',
    int,
    0,
  )
  .option('--draw', 'print the steps each seed draws, and run nothing')
  .option('--quick', 'a small run: 12 effects, 1 kill, no shrinking')
  .option('--json', 'print the outcomes as JSON at the end')
  .parse()
  .opts<{
    effects?: number;
    kills?: number;
    seeds: number;
    seed?: number;
    path?: string;
    workers: number;
    devRestarts?: number;
    dies?: number;
    terminations?: number;
    callTimeoutMs: number;
    settleSeconds?: number;
    reconcileSeconds?: number;
    shrinkSeconds?: number;
    quick?: boolean;
    json?: boolean;
    mix: string;
    draw?: boolean;
    skewSeconds?: number;
    pageFill: number;
  }>();

const quick = !!opts.quick;
if (opts.draw) {
  const first = opts.seed ?? 1;
  for (let seed = first; seed < first + opts.seeds; seed++) {
    const steps = drawnSteps(
      { effects: opts.effects ?? (quick ? 12 : 40), mix: opts.mix, pageFill: opts.pageFill },
      seed,
    );
    process.stdout.write(`seed ${seed}: ${steps.join('; ')}\n`);
  }
  process.exit(0);
}
const started = Date.now();
const stamp = () => `[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s]`;
const outcomes = await runChaos({
  effects: opts.effects ?? (quick ? 12 : 40),
  kills: opts.kills ?? (quick ? 1 : 2),
  devRestarts: opts.devRestarts ?? 1,
  dies: opts.dies ?? (quick ? 1 : 2),
  terminations: opts.terminations ?? 1,
  seeds: opts.seeds,
  ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
  ...(opts.path ? { path: opts.path } : {}),
  workers: Math.max(2, opts.workers),
  callTimeoutMs: opts.callTimeoutMs,
  settleMs: (opts.settleSeconds ?? (quick ? 90 : 180)) * 1000,
  reconcileMs: (opts.reconcileSeconds ?? 20) * 1000,
  shrinkMs: (opts.shrinkSeconds ?? (quick ? 0 : 600)) * 1000,
  mix: opts.mix,
  pageFill: opts.pageFill,
  ...(opts.skewSeconds !== undefined ? { skewSeconds: opts.skewSeconds } : {}),
  log: (line) => process.stdout.write(`${stamp()} ${line}\n`),
});

process.stdout.write('\n== chaos run ==\n');
for (const o of outcomes) {
  process.stdout.write(
    `seed ${o.seed}: ${o.failed ? 'FAILED' : 'passed'} (${o.runs} run(s), ${Math.round(o.wallMs / 1000)} s)\n`,
  );
  if (o.verdict) for (const line of summarize(o.verdict)) process.stdout.write(`${line}\n`);
  if (o.failed) {
    process.stdout.write(`  failing steps${o.runs > 1 ? ' (shrunk)' : ''}: ${o.counterexample ?? '?'}\n`);
    process.stdout.write(`  replay: npm run chaos -- --seed ${o.seed}${o.path ? ` --path "${o.path}"` : ''}\n`);
    if (o.error && !o.verdict) process.stdout.write(`  error: ${o.error}\n`);
  }
}
process.stdout.write('\n== table ==\n');
for (const line of formatTable(outcomes.flatMap((o) => (o.verdict ? [tableRow(o.seed, o.verdict)] : []))))
  process.stdout.write(`${line}\n`);
if (opts.json) process.stdout.write(`${JSON.stringify(outcomes, null, 2)}\n`);
const failed = outcomes.filter((o) => o.failed || (o.verdict && violationsOf(o.verdict).length));
process.stdout.write(
  `${failed.length ? `${failed.length} of ${outcomes.length} seed(s) failed` : 'all seeds passed'}\n`,
);
process.exitCode = failed.length ? 1 : 0;
