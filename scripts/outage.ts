// npm run outage: a provider outage at volume on the cluster or the dev server (scripts/outage/run.ts), with a
// progress bar; prints the table per phase, the drain ratio, what a look and a wake cost, and the audit, and writes
// the chart (SVG) and the raw report (JSON) into artifacts/.
//
//   npm run outage -- [--target cluster|dev] [--effects 300] [--hold-s 30] [--rate 80] [--workers 3]
//                     [--concurrency 8] [--cache n] [--look-now dry-run|dry-run-signals|direct|none] [--probe-effects 3] [--probe-window-s 15]
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { SingleBar } from 'cli-progress';
import { Command, InvalidArgumentError } from 'commander';
import { projectRoot } from '../workers/config.js';
import { formatAudit } from './audit/audit.js';
import { outageChart } from './outage/chart.js';
import { formatOutage } from './outage/format.js';
import { LOOK_NOW_MODES, type LookNowMode, runOutage } from './outage/run.js';

const int = (raw: string) => {
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new InvalidArgumentError('expected a positive integer');
  return Number(raw);
};
const nonNegative = (raw: string) => {
  if (!/^\d+$/.test(raw)) throw new InvalidArgumentError('expected an integer ≥ 0');
  return Number(raw);
};
const opts = new Command('outage')
  .option(
    '--target <cluster|dev>',
    'the Temporal it runs on: the cluster persisted in PostgreSQL, or the dev server',
    (raw: string) => {
      if (raw !== 'dev' && raw !== 'cluster') throw new InvalidArgumentError('expected cluster or dev');
      return raw;
    },
    'cluster',
  )
  .option('--effects <n>', 'effects approved during the outage', int, 300)
  .option('--hold-s <s>', 'seconds the outage lasts once they are parked', int, 30)
  // 80: above the declared readback rates at the provider (keyed-api 50 + social-feed 10), with room for the keyed
  // API's same-key retries (writes), so the declared rates, not the provider, bound the drain (docs/price-at-scale.md).
  .option('--rate <n>', "the provider's rate limit once back (requests/s)", int, 80)
  .option('--workers <n>', 'worker processes', int, 3)
  .option('--concurrency <n>', 'approvals in flight at once', int, 8)
  .option('--cache <n>', "each worker's sticky cache (maxCachedWorkflows)", int)
  .option('--phase-limit-s <s>', 'the longest a phase (park, recover) may take before the run moves on', int, 1800)
  .option('--drain-limit-s <s>', 'the longest the drain (recover) may take, if shorter than --phase-limit-s', int)
  .option(
    '--look-now <dry-run|dry-run-signals|direct|none>',
    "once the provider is back, every parked effect looks now: as an operator's `effect decide --look-now` (its dry " +
      'run, then a reset of each waiting look), the same with the look-now signal instead of the reset, one look-now ' +
      'each at once from the ledger, or none (their scheduled looks)',
    (raw: string) => {
      if (!(LOOK_NOW_MODES as readonly string[]).includes(raw))
        throw new InvalidArgumentError(`expected ${LOOK_NOW_MODES.join(', ')}`);
      return raw;
    },
    'dry-run',
  )
  .option(
    '--probe-effects <n>',
    'effects waiting for a person whose looks and wakes are measured (0 skips)',
    nonNegative,
    3,
  )
  .option('--probe-window-s <s>', "how long the probe's looks are watched", int, 15)
  .parse()
  .opts<{
    target: 'cluster' | 'dev';
    effects: number;
    holdS: number;
    rate: number;
    workers: number;
    concurrency: number;
    cache?: number;
    phaseLimitS: number;
    drainLimitS?: number;
    lookNow: LookNowMode;
    probeEffects: number;
    probeWindowS: number;
  }>();

const bar = new SingleBar({
  format: '{phase} [{bar}] {value}/{total} {what} | RSS {rss} MiB | {elapsed}s',
  hideCursor: true,
  // Piped to a log, it still says where it is, every 10 s.
  noTTYOutput: true,
  notTTYSchedule: 10_000,
});
let barStarted = false;
const report = await runOutage({
  target: opts.target,
  lookNow: opts.lookNow,
  probeEffects: opts.probeEffects,
  probeWindowMs: opts.probeWindowS * 1000,
  effects: opts.effects,
  holdMs: opts.holdS * 1000,
  providerRatePerSecond: opts.rate,
  workers: opts.workers,
  approvalConcurrency: opts.concurrency,
  phaseTimeoutMs: opts.phaseLimitS * 1000,
  ...(opts.drainLimitS ? { drainTimeoutMs: opts.drainLimitS * 1000 } : {}),
  ...(opts.cache ? { maxCachedWorkflows: opts.cache } : {}),
  log: (line) => {
    if (barStarted) bar.stop();
    barStarted = false;
    process.stdout.write(`${line}\n`);
  },
  onSample: (sample, phase) => {
    const settled =
      (sample.stages.recorded ?? 0) +
      (sample.stages.rejected ?? 0) +
      (sample.stages.abandoned ?? 0) +
      sample.waitingForPerson;
    const value = phase === 'recover' ? settled : (sample.stages.unknown ?? 0);
    const payload = {
      phase,
      what: phase === 'recover' ? 'settled' : 'in UNKNOWN',
      rss: sample.workers.map((w) => w.rssMiB).join('/'),
      elapsed: Math.round(sample.t / 1000),
    };
    if (!barStarted) {
      bar.start(opts.effects, value, payload);
      barStarted = true;
    } else bar.update(value, payload);
  },
});
if (barStarted) bar.stop();

const dir = resolve(projectRoot, 'artifacts');
mkdirSync(dir, { recursive: true });
const name = `outage-${opts.target === 'dev' ? 'dev-' : ''}${opts.effects}`;
const chart = resolve(dir, `${name}.svg`);
writeFileSync(chart, outageChart(report));
writeFileSync(resolve(dir, `${name}.json`), `${JSON.stringify(report, null, 1)}\n`);
process.stdout.write(`\n${formatOutage(report)}\n\naudit: ${formatAudit(report.audit)}\n\nchart: ${chart}\n`);
process.exitCode = report.settled && report.audit.findings.length === 0 ? 0 : 1;
