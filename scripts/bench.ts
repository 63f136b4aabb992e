// `npm run bench`: what the ledger costs against the workflow a user would otherwise write (issue 14).
// One Temporal (the dev server, or with --target cluster the cluster persisted in PostgreSQL that the
// cluster tests use: harness/temporal-target.ts), one PostgreSQL database, one provider simulator. Workers
// run as child processes (the ledgered one is workers/main.ts, the bare one harness/bench/bare-worker.ts)
// so their RSS can be read.
//
//   main      N effects at concurrency C, bare and ledgered alternately (ABBA), --rounds rounds each, with
//             --main-workers worker processes of each kind (the idle kind paused: --pause-idle)
//   history   events and bytes per effect (fetchHistory on a sample of the last round): the happy path's
//             events against a bare workflow's
//   sql       a small in-process phase: statements and transactions per effect, approval + worker
//   scaling   throughput at each --concurrency-levels, and with each --worker-counts worker processes
//   waiting   --waiting effects left in `unknown` awaiting a human: worker RSS, and the approval rate of
//             --rate-effects fresh effects with none waiting and with them all waiting
//   looks     --look-effects effects awaiting a human, looking every --look-interval-ms (workflow v7: each
//             look a retry of the one activity watchForObject): history events and bytes per look (from
//             the histories before and after --look-window-s, the looks counted in the ledger), per wake
//             (a decision refused as stale, a look-now), and what that makes a day at the default schedule
//
// Writes a table to stdout and bench.json + bench.svg to --out (artifacts/bench by default).
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import cliProgress from 'cli-progress';
import { Command, InvalidArgumentError } from 'commander';
import { createDestinations, destinationContracts } from '../activities/destinations/registry.js';
import { EffectLedgerClient } from '../client/effect-ledger-client.js';
import type { BareEffectInput } from '../harness/bench/bare-activities.js';
import type { bareEffect } from '../harness/bench/bare-workflow.js';
import { cpuByRole, cpuMsPerEffect, type Role } from '../harness/bench/cpu.js';
import { measureLookCost } from '../harness/bench/look-cost.js';
import { memoryOf, resetPeak, startBareWorkerProcess } from '../harness/bench/processes.js';
import { type LatencySummary, renderChart, type Series, summarize, table } from '../harness/bench/report.js';
import { untilSettled } from '../harness/bench/steady.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { postRequest, taskRequest } from '../harness/sample-requests.js';
import { clusterOf, TEMPORAL_TARGET_ENV } from '../harness/temporal-target.js';
import { startWorkerProcess, type WorkerProcess } from '../harness/worker-process.js';
import { openLedger } from '../ledger/db.js';
import { waitFor } from '../stack/wait-for.js';
import { buildIdOf } from '../workers/deployment.js';
import { bundleEffectWorkflows, createEffectWorker } from '../workers/effect-worker.js';

// ---- options ------------------------------------------------------------------------------------------

const int = (min: number) => (raw: string) => {
  const value = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(value >= min)) throw new InvalidArgumentError(`expected an integer ≥ ${min}`);
  return value;
};
const list = (raw: string) => {
  if (raw === 'none' || raw === '') return [];
  return raw.split(',').map((v) => int(1)(v.trim()));
};

interface Options {
  target: 'dev' | 'cluster';
  mainWorkers: number;
  pauseIdle?: boolean;
  localAttempts?: boolean;
  rateEffects?: number;
  settleCapS?: number;
  effects?: number;
  concurrency?: number;
  rounds?: number;
  quick?: boolean;
  concurrencyLevels?: number[];
  workerCounts?: number[];
  scalingEffects?: number;
  sqlEffects?: number;
  historySample?: number;
  waiting?: number;
  waitingIntervalMs?: number;
  absenceGraceMs?: number;
  lookEffects?: number;
  lookIntervalMs?: number;
  lookWindowS?: number;
  out: string;
}

const opts = new Command('bench')
  .description('bare Temporal workflow vs the ledgered happy path: throughput, latency, history, SQL, RSS, scaling')
  .option(
    '--target <dev|cluster>',
    'the Temporal the bench runs on: the dev server, or a cluster persisted in PostgreSQL (harness/cluster/)',
    (raw: string) => {
      if (raw !== 'dev' && raw !== 'cluster') throw new InvalidArgumentError('expected dev or cluster');
      return raw;
    },
    'dev',
  )
  .option('--main-workers <n>', 'worker processes of each kind in the main rounds (default 1)', int(1), 1)
  .option(
    '--pause-idle',
    'in the main rounds, SIGSTOP the workers of the kind not being measured, so only one kind polls ' +
      '(default: on with --target cluster or --main-workers > 1, off otherwise)',
  )
  .option('--no-pause-idle', 'leave both kinds of workers polling in every main round')
  .option('--local-attempts', "the ledgered effects' attempts as local activities (the client's localAttempts, v8)")
  .option('--effects <n>', 'effects per main run (default 300; quick 40)', int(1))
  .option('--concurrency <n>', 'effects in flight in the main runs (default 20; quick 10)', int(1))
  .option('--rounds <n>', 'rounds of (bare, ledgered), alternating which goes first (default 2)', int(1))
  .option('--quick', 'small defaults everywhere: scaling and waiting phases tiny')
  .option(
    '--concurrency-levels <list>',
    'scaling: concurrencies to try, or "none" (default 1,8,32,64; quick 1,8)',
    list,
  )
  .option('--worker-counts <list>', 'scaling: worker processes per kind, or "none" (default 1,2,3; quick 1,2)', list)
  .option('--scaling-effects <n>', 'effects per scaling point (default 200; quick 20)', int(1))
  .option('--sql-effects <n>', 'effects in the in-process SQL-counting phase, 0 skips (default 30; quick 10)', int(0))
  .option('--history-sample <n>', 'effects per kind whose history is fetched (default 20; quick 5)', int(1))
  .option('--waiting <n>', 'effects left waiting in unknown, 0 skips (default 10000; quick 200)', int(0))
  .option(
    '--waiting-interval-ms <ms>',
    'readback interval of the waiting effects (default 600000, the product default)',
    int(1000),
  )
  .option(
    '--absence-grace-ms <ms>',
    "how long a lost post waits before its first readback (default: the destination's own, 60 s for social-feed)",
    int(0),
  )
  .option(
    '--look-effects <n>',
    'looks: effects awaiting a human that look often, to measure what a look and a wake add to history; 0 skips (default 10; quick 3)',
    int(0),
  )
  .option(
    '--rate-effects <n>',
    'waiting: fresh effects approved and recorded with none waiting, then with all waiting, 0 skips (default 200; quick 5)',
    int(0),
  )
  .option(
    '--settle-cap-s <s>',
    'waiting: before each approval-rate window, wait at most this long for the machine to settle, 0 skips (default 900; quick 0)',
    int(0),
  )
  .option('--look-interval-ms <ms>', 'their short interval between looks (default 2000)', int(200))
  .option('--look-window-s <s>', 'how long their looks are watched (default 30; quick 10)', int(1))
  .option('--out <dir>', 'where bench.json and bench.svg go', 'artifacts/bench')
  .parse()
  .opts<Options>();

const quick = Boolean(opts.quick);
const pick = <T>(given: T | undefined, full: T, small: T): T => given ?? (quick ? small : full);
const config = {
  target: opts.target,
  mainWorkers: opts.mainWorkers,
  pauseIdle: opts.pauseIdle ?? (opts.target === 'cluster' || opts.mainWorkers > 1),
  effects: pick(opts.effects, 300, 40),
  concurrency: pick(opts.concurrency, 20, 10),
  rounds: pick(opts.rounds, 2, 2),
  concurrencyLevels: pick(opts.concurrencyLevels, [1, 8, 32, 64], [1, 8]),
  workerCounts: pick(opts.workerCounts, [1, 2, 3], [1, 2]),
  scalingEffects: pick(opts.scalingEffects, 200, 20),
  sqlEffects: pick(opts.sqlEffects, 30, 10),
  historySample: pick(opts.historySample, 20, 5),
  waiting: pick(opts.waiting, 10_000, 200),
  waitingIntervalMs: opts.waitingIntervalMs ?? 600_000,
  absenceGraceMs: opts.absenceGraceMs,
  rateEffects: pick(opts.rateEffects, 200, 5),
  settleCapS: pick(opts.settleCapS, 900, 0),
  lookEffects: pick(opts.lookEffects, 10, 3),
  lookIntervalMs: opts.lookIntervalMs ?? 2000,
  lookWindowS: pick(opts.lookWindowS, 30, 10),
  localAttempts: Boolean(opts.localAttempts),
  quick,
};
const outDir = resolve(opts.out);

// ---- progress -----------------------------------------------------------------------------------------

const log = (line: string) => process.stderr.write(`bench: ${line}\n`);
function progressBar(label: string, total: number) {
  const bar = new cliProgress.SingleBar(
    { format: `${label.padEnd(28)} [{bar}] {value}/{total} {rate} eff/s`, hideCursor: true, clearOnComplete: true },
    cliProgress.Presets.shades_classic,
  );
  const started = performance.now();
  let done = 0;
  bar.start(total, 0, { rate: '0.0' });
  return {
    tick() {
      done++;
      bar.increment(1, { rate: (done / ((performance.now() - started) / 1000)).toFixed(1) });
    },
    stop: () => bar.stop(),
  };
}

/** Runs fn(i) for i in [0, n) with at most `concurrency` in flight. */
async function pool(n: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, concurrency) }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

// ---- the two kinds of effect --------------------------------------------------------------------------

type Kind = 'bare' | 'ledgered';

interface RunResult {
  kind: Kind;
  phase: string;
  round?: number;
  effects: number;
  concurrency: number;
  workerProcesses: number;
  seconds: number;
  effectsPerSecond: number;
  latencyMs: LatencySummary;
  /** How each effect ended: recorded (ledgered), completed (bare), or what went wrong. */
  ended: Record<string, number>;
  /** Peak RSS (VmHWM) of each worker process of this kind during the run, MiB. */
  workerPeakRssMiB: number[];
  /** CPU milliseconds per effect, per process role (where the time went). */
  cpuMsPerEffect: Record<string, number>;
  effectIds: string[];
  latencies: number[];
}

interface Bench {
  stack: Stack;
  client: Client;
  effects: EffectLedgerClient;
  bareQueue: string;
  workers: Record<Kind, WorkerProcess[]>;
  tag: string;
}

async function runOne(bench: Bench, kind: Kind, effectId: string, i: number): Promise<string> {
  const request = `request-${i}`;
  if (kind === 'ledgered') {
    await bench.effects.approve({ ...taskRequest(effectId, request), approvedBy: 'bench@example.com' });
    return (await bench.effects.result(effectId)).stage;
  }
  const input: BareEffectInput = { effectId, title: 'Prepare preview', request };
  const handle = await bench.client.workflow.start<typeof bareEffect>('bareEffect', {
    workflowId: effectId,
    taskQueue: bench.bareQueue,
    args: [input],
  });
  return (await handle.result()).objectId ? 'completed' : 'no object ID';
}

/** The processes of the bench's stack, by role (harness/bench/cpu.ts). */
function stackRoles(bench: Bench): Record<string, Role> {
  const pids = (kind: Kind) => new Set(bench.workers[kind].map((w) => w.child.pid));
  const port = bench.stack.env.address.split(':').at(-1);
  const database = new URL(bench.stack.databaseUrl).pathname.slice(1);
  const cluster = clusterOf(bench.stack.env);
  const backendOf = (p: { cmdline: string }, db: string) =>
    p.cmdline.startsWith('postgres:') && p.cmdline.includes(` ${db} `);
  return {
    'ledgered worker': (p) => pids('ledgered').has(p.pid),
    'bare worker': (p) => pids('bare').has(p.pid),
    'bench (approver)': (p) => p.pid === process.pid,
    'temporal server': cluster
      ? (p) => p.pid === cluster.server?.child.pid
      : (p) => p.cmdline.includes('start-dev') && p.cmdline.includes(`--port ${port} `),
    postgres: (p) => backendOf(p, database),
    // The cluster's persistence and visibility: PostgreSQL backends on its two databases.
    ...(cluster
      ? {
          'postgres (Temporal)': (p: { cmdline: string }) =>
            backendOf(p, cluster.databases.temporal) || backendOf(p, cluster.databases.visibility),
        }
      : {}),
    simulator: (p) => p.ppid === process.pid && p.cmdline.includes('simulator/main.ts'),
  };
}

async function run(
  bench: Bench,
  kind: Kind,
  phase: string,
  count: number,
  concurrency: number,
  round?: number,
): Promise<RunResult> {
  const prefix = `${kind}:${bench.tag}:${phase}${round === undefined ? '' : `:r${round}`}:`;
  const workers = bench.workers[kind];
  for (const w of workers) resetPeak(w.child.pid);
  const ids = Array.from({ length: count }, (_, i) => `${prefix}${i}`);
  const latencies: number[] = [];
  const ended: Record<string, number> = {};
  const bar = progressBar(`${phase}${round === undefined ? '' : ` r${round}`} ${kind} c=${concurrency}`, count);
  const roles = stackRoles(bench);
  const cpuBefore = cpuByRole(roles);
  const started = performance.now();
  await pool(count, concurrency, async (i) => {
    const t0 = performance.now();
    let end: string;
    try {
      end = await runOne(bench, kind, `${prefix}${i}`, i);
    } catch (error) {
      end = `error: ${(error as Error).message.slice(0, 80)}`;
    }
    latencies.push(performance.now() - t0);
    ended[end] = (ended[end] ?? 0) + 1;
    bar.tick();
  });
  const seconds = (performance.now() - started) / 1000;
  bar.stop();
  const result: RunResult = {
    kind,
    phase,
    ...(round === undefined ? {} : { round }),
    effects: count,
    concurrency,
    workerProcesses: workers.length,
    seconds,
    effectsPerSecond: count / seconds,
    latencyMs: summarize(latencies),
    ended,
    workerPeakRssMiB: workers.map((w) => memoryOf(w.child.pid)?.peakMiB ?? Number.NaN),
    cpuMsPerEffect: cpuMsPerEffect(cpuBefore, cpuByRole(roles), count),
    effectIds: ids,
    latencies,
  };
  log(
    `${phase}${round === undefined ? '' : ` round ${round}`} ${kind}: ${result.effectsPerSecond.toFixed(1)} effects/s, ` +
      `p50 ${result.latencyMs.p50.toFixed(0)} ms, ended ${JSON.stringify(ended)}, CPU ms/effect ` +
      Object.entries(result.cpuMsPerEffect)
        .filter(([, ms]) => ms > 0)
        .map(([role, ms]) => `${role} ${ms.toFixed(1)}`)
        .join(', '),
  );
  return result;
}

// ---- history ------------------------------------------------------------------------------------------

interface HistorySize {
  events: number;
  bytes: number;
  /** ActivityTaskScheduled events: the activities the effect ran (each a task round trip). */
  activities: number;
  /** Events by type (EVENT_TYPE_ dropped): where the events come from. */
  types: Record<string, number>;
  runId: string;
}

async function historyOf(client: Client, workflowId: string): Promise<HistorySize> {
  const handle = client.workflow.getHandle(workflowId);
  const { runId } = await handle.describe();
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  const events = history.events ?? [];
  const types: Record<string, number> = {};
  for (const e of events) {
    const name = (proto.temporal.api.enums.v1.EventType[e.eventType ?? 0] ?? String(e.eventType)).replace(
      /^EVENT_TYPE_/,
      '',
    );
    types[name] = (types[name] ?? 0) + 1;
  }
  return {
    events: events.length,
    bytes: proto.temporal.api.history.v1.History.encode(history).finish().length,
    activities: events.filter((e) => e.activityTaskScheduledEventAttributes).length,
    types,
    runId,
  };
}

async function historyStats(client: Client, ids: string[]) {
  const sizes = await Promise.all(ids.map((id) => historyOf(client, id)));
  const mean = (f: (h: HistorySize) => number) => sizes.reduce((s, h) => s + f(h), 0) / (sizes.length || 1);
  const names = [...new Set(sizes.flatMap((h) => Object.keys(h.types)))].sort();
  return {
    sample: sizes.length,
    eventsPerEffect: mean((h) => h.events),
    bytesPerEffect: mean((h) => h.bytes),
    activitiesPerEffect: mean((h) => h.activities),
    eventsPerEffectByType: Object.fromEntries(names.map((n) => [n, mean((h) => h.types[n] ?? 0)])),
  };
}

// ---- SQL statements and transactions (in-process worker, counted ledgers) --------------------------------

interface SqlCounts {
  /** Statements other than BEGIN / COMMIT / ROLLBACK. */
  statements: number;
  /** Explicit transactions: BEGIN count. */
  transactions: number;
  /** Statements sent outside an explicit transaction: each is its own implicit transaction. */
  implicitTransactions: number;
}

/** Counts one ledger's statements. Its pool has one connection, so BEGIN…COMMIT brackets are exact. */
function sqlCounter() {
  const counts: SqlCounts = { statements: 0, transactions: 0, implicitTransactions: 0 };
  let inTransaction = false;
  return {
    counts,
    onStatement(query: string) {
      const q = query.trimStart().toLowerCase();
      if (q.startsWith('begin')) {
        counts.transactions++;
        inTransaction = true;
      } else if (q.startsWith('commit') || q.startsWith('rollback')) {
        inTransaction = false;
      } else {
        counts.statements++;
        if (!inTransaction) counts.implicitTransactions++;
      }
    },
  };
}

async function sqlPhase(bench: Bench, count: number) {
  const approval = sqlCounter();
  const worker = sqlCounter();
  const clientLedger = openLedger(bench.stack.databaseUrl, { max: 1, onStatement: approval.onStatement });
  const workerLedger = openLedger(bench.stack.databaseUrl, { max: 1, onStatement: worker.onStatement });
  const taskQueue = `bench-sql-${bench.tag}`;
  const effects = new EffectLedgerClient({ client: bench.client, db: clientLedger.db, taskQueue });
  try {
    const workflowBundle = await bundleEffectWorkflows();
    const inProcess = await createEffectWorker({
      connection: bench.stack.env.nativeConnection,
      namespace: bench.stack.namespace,
      taskQueue,
      workflowBundle,
      deployment: { deploymentName: 'effect-ledger', buildId: buildIdOf(workflowBundle.code) },
      becomeCurrent: true,
      db: workerLedger.db,
      destinations: createDestinations({ providerUrl: bench.stack.simulator.url }),
    });
    const ended: Record<string, number> = {};
    await inProcess.runUntil(async () => {
      const bar = progressBar('sql (in-process worker)', count);
      await pool(count, 5, async (i) => {
        const effectId = `sql:${bench.tag}:${i}`;
        await effects.approve(taskRequest(effectId, `request-${i}`));
        const { stage } = await effects.result(effectId);
        ended[stage] = (ended[stage] ?? 0) + 1;
        bar.tick();
      });
      bar.stop();
    });
    const per = (n: number) => n / count;
    const side = (c: SqlCounts) => ({
      statements: per(c.statements),
      transactions: per(c.transactions),
      implicitTransactions: per(c.implicitTransactions),
    });
    const a = approval.counts;
    const w = worker.counts;
    return {
      effects: count,
      ended,
      perEffect: {
        approval: side(a),
        worker: side(w),
        total: side({
          statements: a.statements + w.statements,
          transactions: a.transactions + w.transactions,
          implicitTransactions: a.implicitTransactions + w.implicitTransactions,
        }),
      },
      note: 'statements exclude BEGIN/COMMIT/ROLLBACK; transactions = BEGIN count; implicitTransactions = statements sent outside BEGIN…COMMIT (each its own transaction)',
    };
  } finally {
    await Promise.allSettled([clientLedger.close(), workerLedger.close()]);
  }
}

// ---- waiting in unknown -------------------------------------------------------------------------------

async function queueLostPosts(bench: Bench, count: number) {
  // The provider resets the connection before storing the post: the send is UNKNOWN, readback finds
  // nothing, and social-feed (no key) never retries by itself, so the effect waits for a human.
  for (let left = count; left > 0; left -= 10_000) {
    await bench.stack.simulator.fault('fail_before_commit', {
      path: '/social/v1/posts',
      count: Math.min(left, 10_000),
    });
  }
}

/**
 * Approves the effects in batches, each let through once the previous ones reached `unknown` (a dev
 * server swamped with thousands of fresh workflows times out its own persistence), then checks a sample
 * awaits a human. Gives up only after `stallMs` without progress, however slow the machine.
 */
async function approveUntilWaiting(
  bench: Bench,
  effects: EffectLedgerClient,
  prefix: string,
  count: number,
  stallMs = 180_000,
) {
  const batch = Math.max(100, config.concurrency * 5);
  const bar = progressBar(`waiting: ${count} to unknown`, count);
  let seen = 0;
  try {
    for (let from = 0; from < count; from += batch) {
      const to = Math.min(count, from + batch);
      await pool(to - from, config.concurrency, async (j) => {
        await effects.approve(postRequest(`${prefix}${from + j}`, `bench post ${from + j}`));
      });
      let progressAt = Date.now();
      for (;;) {
        const rows = await bench.stack.ledger.sql<{ stage: string; n: number }[]>`
          SELECT stage, count(*)::int AS n FROM effects WHERE effect_id LIKE ${`${prefix}%`} GROUP BY stage`;
        const stages = Object.fromEntries(rows.map((r) => [r.stage, r.n]));
        const unknown = stages.unknown ?? 0;
        if (unknown > seen) progressAt = Date.now();
        for (; seen < unknown; seen++) bar.tick();
        if (unknown >= to) break;
        if (Date.now() - progressAt > stallMs) {
          throw new Error(
            `no progress for ${stallMs / 1000} s towards ${to} effects in unknown: ${JSON.stringify(stages)}`,
          );
        }
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  } finally {
    bar.stop();
  }
  // Readbacks are paced (the destination's readback rate, 5/s by default), so the last effects' first
  // readbacks trail their `unknown` by minutes: wait, while they progress, until every one was read back
  // once, so what follows (the approval rate with them waiting) runs with them parked, not being read back.
  let readBack = 0;
  let progressAt = Date.now();
  for (;;) {
    const [row] = await bench.stack.ledger.sql<{ n: number }[]>`
      SELECT count(DISTINCT effect_id)::int AS n FROM provider_evidence
      WHERE kind = 'readback' AND effect_id LIKE ${`${prefix}%`}`;
    const n = row?.n ?? 0;
    if (n >= count) break;
    if (n > readBack) [readBack, progressAt] = [n, Date.now()];
    if (Date.now() - progressAt > stallMs) {
      throw new Error(`no readback for ${stallMs / 1000} s: ${n} of ${count} waiting effects read back once`);
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  const step = Math.max(1, Math.floor(count / 10));
  const sample = Array.from({ length: Math.ceil(count / step) }, (_, i) => `${prefix}${i * step}`);
  await waitFor(
    async () => {
      const views = await Promise.all(sample.map((id) => bench.effects.status(id)));
      return views.every((v) => v.live?.awaiting?.startsWith('a human decision'));
    },
    'the waiting effects to await a human',
    stallMs,
  );
}

/**
 * Fresh happy effects approved and recorded (as the main phase's ledgered runs), for the approval rate. First the
 * machine settles (harness/bench/steady.ts): the rate with effects waiting is of them waiting, not of what their
 * parking left running; the rate with none waiting waits the same way, after the phases before it.
 */
async function approvalRate(bench: Bench, phase: string) {
  if (config.rateEffects === 0) return null;
  const settle = config.settleCapS > 0 ? await untilSettled({ capMs: config.settleCapS * 1000 }) : undefined;
  if (settle)
    log(
      `${phase}: machine ${settle.settled ? 'settled' : 'still settling'} after ${settle.seconds.toFixed(0)} s, ` +
        `busy cores per window ${settle.windows.map((c) => c.toFixed(2)).join(' ')}`,
    );
  const r = await run(bench, 'ledgered', phase, config.rateEffects, config.concurrency);
  return {
    effectsPerSecond: r.effectsPerSecond,
    latencyMs: r.latencyMs,
    ended: r.ended,
    cpuMsPerEffect: r.cpuMsPerEffect,
    ...(settle
      ? { settle: { settled: settle.settled, seconds: Math.round(settle.seconds), busyCores: settle.windows.at(-1) } }
      : {}),
  };
}

/** The waiting effects' absence grace, when --absence-grace-ms overrides the destination's. */
const graceOption = config.absenceGraceMs === undefined ? {} : { absenceGraceMs: config.absenceGraceMs };

async function waitingPhase(bench: Bench) {
  const n = config.waiting;
  const workers = bench.workers.ledgered;
  const rateNoneWaiting = await approvalRate(bench, 'rate-0-waiting');
  const before = workers.map((w) => memoryOf(w.child.pid));
  for (const w of workers) resetPeak(w.child.pid);
  const waiting = new EffectLedgerClient({
    client: bench.client,
    db: bench.stack.ledger.db,
    taskQueue: bench.stack.taskQueue,
    readbackIntervalMs: config.waitingIntervalMs,
    ...graceOption,
  });
  await queueLostPosts(bench, n);
  const started = performance.now();
  await approveUntilWaiting(bench, waiting, `wait:${bench.tag}:`, n);
  const settledSeconds = (performance.now() - started) / 1000;
  log(`waiting: ${n} effects in unknown awaiting a human after ${settledSeconds.toFixed(0)} s`);
  // Let the last workflow tasks finish, then read memory with all of them parked.
  await new Promise((r) => setTimeout(r, 3000));
  const after = workers.map((w) => memoryOf(w.child.pid));
  const rateWhileWaiting = await approvalRate(bench, `rate-${n}-waiting`);
  return {
    effects: n,
    readbackIntervalMs: config.waitingIntervalMs,
    secondsToSettle: settledSeconds,
    approvalRate:
      rateNoneWaiting && rateWhileWaiting
        ? {
            effects: config.rateEffects,
            concurrency: config.concurrency,
            noneWaiting: rateNoneWaiting,
            whileWaiting: rateWhileWaiting,
            ratio: rateWhileWaiting.effectsPerSecond / rateNoneWaiting.effectsPerSecond,
          }
        : null,
    ledgeredWorkers: workers.map((_w, i) => ({
      rssBeforeMiB: before[i]?.rssMiB,
      rssWithWaitingMiB: after[i]?.rssMiB,
      peakDuringPhaseMiB: after[i]?.peakMiB,
    })),
  };
}

// ---- what a look and a wake cost (workflow v7) ----------------------------------------------------------

/** Wakes measured per kind: each takes a few seconds, one effect at a time. */
const WAKES_MEASURED = 5;

/**
 * --look-effects lost posts awaiting a human, looking every --look-interval-ms (no backoff; no hand-over within the
 * window): their histories before and after --look-window-s of looks, then one wake of each kind
 * (harness/bench/look-cost.ts). Scaled to a day at the default schedule: the product's interval, doubling up to
 * social-feed's cap.
 */
async function looksPhase(bench: Bench) {
  const lookClient = new EffectLedgerClient({
    client: bench.client,
    db: bench.stack.ledger.db,
    taskQueue: bench.stack.taskQueue,
    readbackIntervalMs: config.lookIntervalMs,
    readbackMaxIntervalMs: config.lookIntervalMs,
    ...graceOption,
    readbacksPerRun: 1_000_000,
  });
  const prefix = `looks:${bench.tag}:`;
  const ids = Array.from({ length: config.lookEffects }, (_, i) => `${prefix}${i}`);
  await queueLostPosts(bench, ids.length);
  await approveUntilWaiting(bench, lookClient, prefix, ids.length);
  const roles = stackRoles(bench);
  const cost = await measureLookCost(
    { client: bench.client, sql: bench.stack.ledger.sql, effects: lookClient, cpu: () => cpuByRole(roles), log },
    ids,
    config.lookWindowS * 1000,
    { wakes: Math.min(ids.length, WAKES_MEASURED) },
  );
  // At the default schedule, the looks come at the product's interval, doubling up to the destination's cap; a day
  // at the cap is what a long wait costs.
  const steadyIntervalMs = Math.max(
    config.waitingIntervalMs,
    destinationContracts['social-feed']?.readbackMaxIntervalMs ?? 0,
  );
  const looksPerHour = 3_600_000 / steadyIntervalMs;
  const listingPagesPerLook = 2; // social-feed scans at most 100 posts, 50 per page
  const wake = cost.wakes.lookNow;
  return {
    lookIntervalMs: config.lookIntervalMs,
    ...cost,
    atDefaultSchedule: {
      readbackIntervalMs: config.waitingIntervalMs,
      capMs: steadyIntervalMs,
      looksPerHourPerEffect: looksPerHour,
      readbackRequestsPerHourPerEffect: { atMost: looksPerHour * listingPagesPerLook, listingPagesPerLook },
      historyEventsPerEffectPerDay: cost.eventsPerLook * looksPerHour * 24,
      historyBytesPerEffectPerDay: cost.bytesPerLook * looksPerHour * 24,
      workerCpuMsPerEffectPerHour: (cost.cpuMsPerLook['ledgered worker'] ?? Number.NaN) * looksPerHour,
      eventsPerWake: wake.eventsPerWake,
      note:
        `looks a day at the ${steadyIntervalMs / 1000} s cap × events (bytes, worker CPU) per look measured at a ` +
        `${config.lookIntervalMs} ms interval; a wake (a person's decision, a look-now, a verdict that changed) adds its ` +
        'own events, and every readbacksPerRun wakes (default 50) a hand-over (continue-as-new); worker CPU per look ' +
        "includes the window's idle work, so it is an upper bound",
    },
  };
}

// ---- the whole bench ----------------------------------------------------------------------------------

async function ensureWorkers(bench: Bench, kind: Kind, count: number) {
  const list = bench.workers[kind];
  while (list.length < count) {
    list.push(
      kind === 'ledgered'
        ? await startWorkerProcess(bench.stack)
        : await startBareWorkerProcess(bench.stack, bench.bareQueue),
    );
  }
  while (list.length > count) await list.pop()?.kill();
}

/**
 * With --pause-idle, only the kind being measured polls: the other kind's worker processes are stopped
 * (SIGSTOP; nothing is queued for them meanwhile) and continued (SIGCONT) before their own run. A stopped
 * process still dies with SIGKILL, so kill() and the reaper stop it as they stop a running one.
 */
function measureOnly(bench: Bench, kind: Kind | 'all') {
  if (!config.pauseIdle) return;
  for (const k of ['bare', 'ledgered'] as const) {
    for (const w of bench.workers[k]) w.child.kill(kind === 'all' || k === kind ? 'SIGCONT' : 'SIGSTOP');
  }
}

const mean = (values: number[]) => values.reduce((s, v) => s + v, 0) / (values.length || 1);
const fmt = (v: number | undefined, digits = 1) => (v === undefined || Number.isNaN(v) ? '-' : v.toFixed(digits));

async function main() {
  const started = new Date();
  log(`config ${JSON.stringify(config)}`);
  // harness/temporal-target.ts: startStack starts the cluster instead of the dev server, and its
  // environment's teardown (stack.stop) stops the cluster's server and drops its databases.
  if (config.target === 'cluster') process.env[TEMPORAL_TARGET_ENV] = 'cluster';
  const stack = await startStack({ purpose: 'bench', localAttempts: config.localAttempts });
  const tag = randomBytes(3).toString('hex');
  const bench: Bench = {
    stack,
    client: stack.env.client,
    effects: stack.effects,
    bareQueue: `bench-bare-${tag}`,
    workers: { bare: [], ledgered: [] },
    tag,
  };
  try {
    await Promise.all([
      ensureWorkers(bench, 'ledgered', config.mainWorkers),
      ensureWorkers(bench, 'bare', config.mainWorkers),
    ]);
    const startup = {
      ledgered: memoryOf(bench.workers.ledgered[0]?.child.pid),
      bare: memoryOf(bench.workers.bare[0]?.child.pid),
    };
    log(`workers up; startup peak RSS (bundling included) ${JSON.stringify(startup)}`);

    // Warm-up: workflow caches, connections, JIT. Not reported. Three waves at full concurrency: with one
    // short wave the first measured ledgered round still paid for its worker's JIT (0.58× against 0.99×).
    const warm = Math.min(config.effects, config.concurrency * 3);
    for (const kind of ['bare', 'ledgered'] as const) {
      measureOnly(bench, kind);
      await run(bench, kind, 'warmup', warm, config.concurrency);
    }

    const main: RunResult[] = [];
    for (let round = 1; round <= config.rounds; round++) {
      const order: Kind[] = round % 2 === 1 ? ['bare', 'ledgered'] : ['ledgered', 'bare'];
      for (const kind of order) {
        measureOnly(bench, kind);
        main.push(await run(bench, kind, 'main', config.effects, config.concurrency, round));
      }
    }
    measureOnly(bench, 'all');
    const rounds = Array.from({ length: config.rounds }, (_, i) => {
      const rate = (kind: Kind) =>
        main.find((r) => r.round === i + 1 && r.kind === kind)?.effectsPerSecond ?? Number.NaN;
      return {
        round: i + 1,
        bareEffectsPerSecond: rate('bare'),
        ledgeredEffectsPerSecond: rate('ledgered'),
        ratio: rate('ledgered') / rate('bare'),
      };
    });

    const sample = (kind: Kind) =>
      (main.find((r) => r.kind === kind && r.round === config.rounds)?.effectIds ?? []).slice(0, config.historySample);
    const history = {
      bare: await historyStats(bench.client, sample('bare')),
      ledgered: await historyStats(bench.client, sample('ledgered')),
    };

    const sql = config.sqlEffects > 0 ? await sqlPhase(bench, config.sqlEffects) : null;

    const byConcurrency: RunResult[] = [];
    for (const c of config.concurrencyLevels) {
      const count = Math.max(config.scalingEffects, c * 2);
      for (const kind of ['bare', 'ledgered'] as const) byConcurrency.push(await run(bench, kind, `c${c}`, count, c));
    }
    const byWorkers: RunResult[] = [];
    for (const k of config.workerCounts) {
      await Promise.all([ensureWorkers(bench, 'bare', k), ensureWorkers(bench, 'ledgered', k)]);
      for (const kind of ['bare', 'ledgered'] as const) {
        byWorkers.push(await run(bench, kind, `w${k}`, config.scalingEffects, config.concurrency));
      }
    }
    await Promise.all([ensureWorkers(bench, 'bare', 1), ensureWorkers(bench, 'ledgered', 1)]);

    // A failed waiting phase must not lose the numbers above: its error goes into the report instead.
    const waiting =
      config.waiting > 0 ? await waitingPhase(bench).catch((error: Error) => ({ error: error.message })) : null;
    const looks =
      config.lookEffects > 0 ? await looksPhase(bench).catch((error: Error) => ({ error: error.message })) : null;

    // ---- report ----
    const strip = ({ effectIds: _ids, latencies: _l, ...rest }: RunResult) => rest;
    const allLatencies = (kind: Kind) => main.filter((r) => r.kind === kind).flatMap((r) => r.latencies);
    const kinds = ['bare', 'ledgered'] as const;
    const summaryOf = (kind: Kind) => {
      const runs = main.filter((r) => r.kind === kind);
      return {
        meanEffectsPerSecond: mean(runs.map((r) => r.effectsPerSecond)),
        latencyMs: summarize(allLatencies(kind)),
        historyEventsPerEffect: history[kind].eventsPerEffect,
        historyBytesPerEffect: history[kind].bytesPerEffect,
        workerPeakRssMiB: Math.max(...runs.flatMap((r) => r.workerPeakRssMiB)),
        workerStartupPeakRssMiB: startup[kind]?.peakMiB,
        cpuMsPerEffect: Object.fromEntries(
          Object.keys(runs[0]?.cpuMsPerEffect ?? {}).map((role) => [
            role,
            mean(runs.map((r) => r.cpuMsPerEffect[role] ?? 0)),
          ]),
        ),
        ended: runs.reduce<Record<string, number>>((acc, r) => {
          for (const [k, v] of Object.entries(r.ended)) acc[k] = (acc[k] ?? 0) + v;
          return acc;
        }, {}),
      };
    };
    const summary = { bare: summaryOf('bare'), ledgered: summaryOf('ledgered') };
    const ratio = {
      perRound: rounds.map((r) => r.ratio),
      mean: mean(rounds.map((r) => r.ratio)),
      ofMeans: summary.ledgered.meanEffectsPerSecond / summary.bare.meanEffectsPerSecond,
    };
    const result = {
      startedAt: started.toISOString(),
      finishedAt: new Date().toISOString(),
      config,
      machine: { cpus: (await import('node:os')).cpus().length, node: process.version },
      summary,
      ratio,
      rounds,
      runs: main.map(strip),
      history: { ...history, note: 'fetchHistory of the last round, first --history-sample effects' },
      sql,
      scaling: { byConcurrency: byConcurrency.map(strip), byWorkerProcesses: byWorkers.map(strip) },
      waiting,
      looks,
    };

    mkdirSync(outDir, { recursive: true });
    writeFileSync(resolve(outDir, 'bench.json'), `${JSON.stringify(result, null, 2)}\n`);
    const series = (runs: RunResult[], x: (r: RunResult) => number): Series[] =>
      kinds.map((kind) => ({
        label: kind,
        color: kind === 'bare' ? '#1f77b4' : '#d62728',
        // Runs at the same x (the main rounds) are drawn as their mean.
        points: [...new Set(runs.filter((r) => r.kind === kind).map(x))]
          .sort((a, b) => a - b)
          .map((v) => [v, mean(runs.filter((r) => r.kind === kind && x(r) === v).map((r) => r.effectsPerSecond))]),
      }));
    writeFileSync(
      resolve(outDir, 'bench.svg'),
      renderChart({
        title: `effect-ledger bench: bare vs ledgered, ${config.effects} effects × ${config.rounds} rounds at concurrency ${config.concurrency}`,
        latencies: kinds.map((kind) => ({
          label: kind,
          color: kind === 'bare' ? '#1f77b4' : '#d62728',
          values: allLatencies(kind).sort((a, b) => a - b),
        })),
        throughputByConcurrency: series([...byConcurrency, ...main], (r) => r.concurrency),
        throughputByWorkers: series(byWorkers, (r) => r.workerProcesses),
      }),
    );

    const out: string[] = [];
    out.push(
      table(
        ['run', 'effects/s', 'p50 ms', 'p95 ms', 'p99 ms', 'worker peak RSS MiB', 'ended'],
        [...main, ...byConcurrency, ...byWorkers].map((r) => [
          `${r.phase}${r.round ? ` r${r.round}` : ''} ${r.kind} c=${r.concurrency} w=${r.workerProcesses}`,
          fmt(r.effectsPerSecond),
          fmt(r.latencyMs.p50, 0),
          fmt(r.latencyMs.p95, 0),
          fmt(r.latencyMs.p99, 0),
          r.workerPeakRssMiB.map((v) => fmt(v, 0)).join('/'),
          Object.entries(r.ended)
            .map(([k, v]) => `${k} ${v}`)
            .join(', '),
        ]),
      ),
      '',
      table(
        ['', 'bare', 'ledgered'],
        [
          [
            'effects/s (mean of rounds)',
            fmt(summary.bare.meanEffectsPerSecond),
            fmt(summary.ledgered.meanEffectsPerSecond),
          ],
          [
            'latency p50 / p95 / p99 ms',
            ...kinds.map((k) => ['p50', 'p95', 'p99'].map((p) => fmt(summary[k].latencyMs[p as 'p50'], 0)).join(' / ')),
          ],
          ['history events per effect', fmt(history.bare.eventsPerEffect), fmt(history.ledgered.eventsPerEffect)],
          ['history bytes per effect', fmt(history.bare.bytesPerEffect, 0), fmt(history.ledgered.bytesPerEffect, 0)],
          ['activities per effect', fmt(history.bare.activitiesPerEffect), fmt(history.ledgered.activitiesPerEffect)],
          ['worker peak RSS MiB (runs)', ...kinds.map((k) => fmt(summary[k].workerPeakRssMiB, 0))],
          ['worker startup peak RSS MiB', ...kinds.map((k) => fmt(startup[k]?.peakMiB, 0))],
          // Where the time went: CPU per effect in each process (a 2-core machine is CPU-bound at c=20).
          ...[
            'worker',
            'temporal server',
            'postgres',
            ...(config.target === 'cluster' ? ['postgres (Temporal)'] : []),
            'bench (approver)',
            'simulator',
          ].map((role) => [
            `CPU ms/effect: ${role}`,
            ...kinds.map((k) => fmt(summary[k].cpuMsPerEffect[role === 'worker' ? `${k} worker` : role])),
          ]),
        ],
      ),
      '',
      `on the ${config.target === 'cluster' ? 'cluster (temporal-server on PostgreSQL)' : 'dev server'}, ` +
        `${config.mainWorkers} worker process(es) of each kind in the main rounds` +
        (config.pauseIdle ? ', the idle kind paused' : ', both kinds polling') +
        (config.localAttempts ? ', ledgered attempts as local activities' : ''),
      `ratio ledgered/bare effects/s: per round ${ratio.perRound.map((r) => fmt(r, 2)).join(', ')}; mean ${fmt(ratio.mean, 2)}`,
    );
    const byType = (kind: Kind) => history[kind].eventsPerEffectByType;
    const extra = [...new Set([...Object.keys(byType('bare')), ...Object.keys(byType('ledgered'))])]
      .map((type) => [type, (byType('ledgered')[type] ?? 0) - (byType('bare')[type] ?? 0)] as const)
      .filter(([, d]) => d !== 0);
    out.push(
      `happy path: ${fmt(history.ledgered.eventsPerEffect)} history events per effect (a bare workflow: ` +
        `${fmt(history.bare.eventsPerEffect)}), ${fmt(history.ledgered.bytesPerEffect, 0)} bytes (bare ` +
        `${fmt(history.bare.bytesPerEffect, 0)})`,
      `history events per effect, ledgered − bare: ${extra.map(([type, d]) => `${type} ${d > 0 ? '+' : ''}${fmt(d)}`).join(', ') || 'none'}`,
    );
    if (sql) {
      const t = sql.perEffect;
      out.push(
        `SQL per happy effect (${sql.effects} effects, in-process): statements ${fmt(t.total.statements)} ` +
          `(approval ${fmt(t.approval.statements)}, worker ${fmt(t.worker.statements)}); explicit transactions ` +
          `${fmt(t.total.transactions)} (approval ${fmt(t.approval.transactions)}, worker ${fmt(t.worker.transactions)}); ` +
          `implicit single-statement transactions ${fmt(t.total.implicitTransactions)}`,
      );
    }
    if (waiting && 'error' in waiting) out.push(`waiting phase failed: ${waiting.error}`);
    else if (waiting) {
      out.push(
        `waiting: ${waiting.effects} effects in unknown: ledgered worker RSS ${waiting.ledgeredWorkers.map((w) => `${fmt(w.rssBeforeMiB, 0)} → ${fmt(w.rssWithWaitingMiB, 0)} MiB (peak ${fmt(w.peakDuringPhaseMiB, 0)})`).join('; ')}`,
      );
      const a = waiting.approvalRate;
      if (a) {
        out.push(
          `approval rate (${a.effects} fresh effects approved and recorded at concurrency ${a.concurrency}): ` +
            `${fmt(a.noneWaiting.effectsPerSecond)} effects/s with none waiting, ${fmt(a.whileWaiting.effectsPerSecond)} ` +
            `with ${waiting.effects} waiting: ${fmt(a.ratio, 2)}×`,
        );
        const settled = (r: typeof a.noneWaiting) =>
          r.settle
            ? `${fmt(r.settle.busyCores ?? Number.NaN, 2)} busy cores after ${r.settle.seconds} s${r.settle.settled ? '' : ' (still settling)'}`
            : 'not waited for';
        out.push(
          `  the machine before each window: none waiting ${settled(a.noneWaiting)}; ${waiting.effects} waiting ${settled(a.whileWaiting)}`,
        );
      }
    }
    if (looks && 'error' in looks) out.push(`looks phase failed: ${looks.error}`);
    else if (looks) {
      const d = looks.atDefaultSchedule;
      const wake = (w: typeof looks.wakes.lookNow) =>
        `${fmt(w.eventsPerWake)} events, ${fmt(w.bytesPerWake, 0)} bytes (${Object.entries(w.eventTypesPerWake)
          .map(([t, n]) => `${t} ${fmt(n)}`)
          .join(', ')}; ${w.wakes} measured)`;
      const cpu = Object.entries(looks.cpuMsPerLook)
        .filter(([, ms]) => ms > 0)
        .map(([role, ms]) => `${role} ${fmt(ms)}`)
        .join(', ');
      out.push(
        `looks: ${looks.effects} effects awaiting a human, looking every ${looks.lookIntervalMs / 1000} s for ` +
          `${fmt(looks.windowSeconds, 0)} s: ${looks.looks} looks in the ledger (watchForObject attempts +${looks.attempts}) ` +
          `added ${looks.events} history events, ${looks.bytes} bytes: ${fmt(looks.eventsPerLook, 2)} events and ` +
          `${fmt(looks.bytesPerLook, 0)} bytes per look; CPU ms per look: ${cpu || '-'}`,
        `  a wake by a decision refused as stale: ${wake(looks.wakes.staleDecision)}`,
        `  a wake by the look-now signal: ${wake(looks.wakes.lookNow)}`,
        `  a look-now by reset of the waiting watch (the client's lookNow): ${looks.resetLookNow.resets} reset, ` +
          `${looks.resetLookNow.looks} looks, ${looks.resetLookNow.events} history events, ${looks.resetLookNow.bytes} bytes`,
        `  at the default schedule (${d.readbackIntervalMs / 1000} s, doubling to ${d.capMs / 1000} s): ` +
          `${fmt(d.looksPerHourPerEffect)} looks/h/effect (≤ ${fmt(d.readbackRequestsPerHourPerEffect.atMost)} listing requests/h), ` +
          `${fmt(d.historyEventsPerEffectPerDay)} history events and ${fmt(d.historyBytesPerEffectPerDay, 0)} bytes ` +
          `per waiting effect per day from looks, worker ≤ ${fmt(d.workerCpuMsPerEffectPerHour)} CPU ms per waiting effect per hour`,
        `  (${d.note})`,
      );
    }
    out.push('', `wrote ${resolve(outDir, 'bench.json')} and bench.svg`);
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    await Promise.allSettled([...bench.workers.bare, ...bench.workers.ledgered].map((w) => w.kill()));
    await stack.stop();
  }
}

await main();
