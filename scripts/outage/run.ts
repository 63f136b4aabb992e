// A provider outage at volume, on the cluster (Temporal persisted in PostgreSQL) or the dev server, with three worker
// processes: N effects approved across the keyed API, the key-less feed and the orders database (a real destination)
// while Toxiproxy cuts the provider and the orders database mid-call, so they park in UNKNOWN; the outage held; the
// provider back behind a rate limit (429 + Retry-After above R requests/s), every parked effect asked to look now
// (the operator's bulk look-now, scripts/bulk-decide.ts); then until every effect is recorded or waits for a person
// with a reason. Sampled every second: stages, each worker's RSS and CPU, the provider's traffic. Then the figures of
// workflow v7's wait: what a look and a wake add to a waiting effect's history (harness/bench/look-cost.ts, on a few
// probe effects), the workers' CPU per waiting effect per hour while the outage held, and the drain against the
// declared readback rates. Ends with the audit (objects at every destination against the ledger's facts, and
// Temporal's view). `npm run outage` prints it (scripts/outage.ts); test/cluster/outage.test.ts runs a small
// configuration on the cluster.
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import postgres from 'postgres';
import { destinationContracts } from '../../activities/destinations/registry.js';
import { closeTemporalClient } from '../../client/connection-close.js';
import { connectTemporalClient } from '../../client/temporal-connection.js';
import { DEFAULT_READBACK_RATE_PER_SECOND } from '../../domain/destination-contract.js';
import { cpuByRole } from '../../harness/bench/cpu.js';
import { type LookCost, measureLookCost } from '../../harness/bench/look-cost.js';
import { liveStatus, resultOf } from '../../harness/effect-probes.js';
import { type Stack, startStack } from '../../harness/local-stack.js';
import { postRequest, refundRequest } from '../../harness/sample-requests.js';
import type { LoggedRequest } from '../../harness/simulator/request-log.js';
import { readsAt, SIMULATED_DESTINATION_PATHS, type TrafficSecond } from '../../harness/simulator/traffic.js';
import { clusterOf, TEMPORAL_TARGET_ENV } from '../../harness/temporal-target.js';
import { startWorkerProcess, type WorkerProcess } from '../../harness/worker-process.js';
import { createOrdersDatabase, type OrdersDatabase } from '../../stack/orders-db.js';
import { startToxiproxy, type ToxiproxyServer } from '../../stack/toxiproxy.js';
import { waitFor } from '../../stack/wait-for.js';
import { type AuditReport, audit } from '../audit/audit.js';
import { destinationRecords, ordersRecords } from '../audit/destination-records.js';
import { temporalProbe } from '../audit/workflow-probe.js';
import { planBulk, sendBulk } from '../bulk-decide.js';

export interface OutageOptions {
  /** The Temporal it runs on: the cluster (persisted in PostgreSQL, the default) or the dev server. */
  target?: 'cluster' | 'dev';
  effects: number;
  /** How long the outage lasts once every effect is parked. */
  holdMs: number;
  /** The provider's rate limit once it is back (requests a second, all its API). */
  providerRatePerSecond: number;
  workers?: number;
  /** Approvals in flight at once (several approving clients, as a busy backend has). */
  approvalConcurrency?: number;
  /** The sticky cache of each worker (EFFECT_LEDGER_MAX_CACHED_WORKFLOWS); unset, the default. */
  maxCachedWorkflows?: number;
  /** Give up waiting for a phase after this long. */
  phaseTimeoutMs?: number;
  /** The drain's own limit (default phaseTimeoutMs): a run at scale may measure the parking and a part of the drain. */
  drainTimeoutMs?: number;
  /**
   * Once the provider is back, every parked effect is asked to look now: `dry-run` (the default) as an operator does,
   * `effect decide --look-now` (the workflow list and its search attributes, then the signals); `direct`, one
   * signal to each effect the ledger holds in UNKNOWN, at once; `none` leaves them to their scheduled looks.
   */
  lookNow?: LookNowMode;
  /** The looks probe: effects waiting for a person that look every second (default 3; 0 skips it). */
  probeEffects?: number;
  /** How long the probe's looks are watched (default 15 s). */
  probeWindowMs?: number;
  log?: (line: string) => void;
  /** Called after each sample (the progress bar). */
  onSample?: (sample: Sample, phase: PhaseName) => void;
}

export type PhaseName = 'park' | 'hold' | 'recover';

export interface WorkerSample {
  pid: number;
  rssMiB: number;
  /** Percent of one core since the previous sample. */
  cpuPercent: number;
}

export interface Sample {
  /** Milliseconds since the run began. */
  t: number;
  stages: Record<string, number>;
  /** Non-terminal effects whose latest readback, since the provider came back, found nothing: a person is asked. */
  waitingForPerson: number;
  workers: WorkerSample[];
}

export interface PhaseReport {
  name: PhaseName;
  startedMs: number;
  endedMs: number;
  /** The stages at the phase's end. */
  stages: Record<string, number>;
  peakRssMiB: number[];
  meanCpuPercent: number[];
  /** Reads a second the provider saw (all its GETs), and 429s it answered. */
  peakReadsPerSecond: number;
  meanReadsPerSecond: number;
  /** The most reads any second saw at each simulated destination (all its readback requests). */
  peakReadsPerSecondByDestination: Record<string, number>;
  limited: number;
  /** CPU milliseconds the worker processes used in the phase, all together. */
  workerCpuMs: number;
}

/** Requests in a window: those the provider let through, and those it answered 429 (arrived, not served). */
export interface RequestCount {
  letThrough: number;
  limited: number;
}

/**
 * The drain against the declared readback rates: how long it took ÷ how long the requests it needed must take. Its
 * requests come from the simulator's own log (arrival times to the millisecond, so a window's first and last
 * seconds count exactly what fell inside them); orders-sql's, one SELECT per look in the ledger.
 */
export interface DrainRatio {
  /** What the window starts at: the last look-now signal sent, or the provider back (the operator's end to end). */
  from: 'last look-now signal' | 'provider back';
  /** Epoch milliseconds; `to` is when the last effect settled, by the ledger (its last row before the run saw it). */
  fromMs: number;
  toMs: number;
  drainSeconds: number;
  /** Requests each destination saw in the window (GETs at its paths; orders-sql: SELECTs, never limited). */
  requestsByDestination: Record<string, RequestCount>;
  /** Seconds each destination's requests let through take at its declared readback rate. */
  secondsAtDeclaredRate: Record<string, number>;
  /** Requests (reads and writes) the provider let through and answered 429 in the window; the former at its limit. */
  providerRequests: RequestCount;
  secondsAtProviderLimit: number;
  /**
   * The longest of those: the least time the drain could take. Requests answered 429 are left out on both sides (a
   * drain at the rates would not have made them), so the time they cost shows in the ratio.
   */
  boundSeconds: number;
  boundBy: string;
  /** drainSeconds ÷ boundSeconds: 1 is a drain at the pace of the rates; the target is ≤ 1.2. NaN: no request. */
  ratio: number;
}

export const LOOK_NOW_MODES = ['dry-run', 'dry-run-signals', 'direct', 'none'] as const;
export type LookNowMode = (typeof LOOK_NOW_MODES)[number];

/** What the bulk look-now after the provider returned did. */
export interface LookNowReport {
  mode: Exclude<LookNowMode, 'none'>;
  planned: number;
  asked: number;
  skipped: number;
  /** Signals that failed because the effect settled between the dry run and its signal. */
  closedMeanwhile: number;
  /** Signals that failed to a running effect, and the first few of them. */
  failed: number;
  failures?: string[];
  /** The dry run (the workflow list and its search attributes; direct: the ledger's query) and the signals. */
  planMs: number;
  sendMs: number;
  /** When the last signal had been sent (epoch ms): the drain ratio's window starts there. */
  lastSignalAtMs: number;
}

export interface OutageReport {
  options: Required<Omit<OutageOptions, 'log' | 'onSample' | 'maxCachedWorkflows'>> & { maxCachedWorkflows?: number };
  mix: Record<string, number>;
  parked: number;
  parkMs: number;
  drainMs: number;
  settled: boolean;
  phases: PhaseReport[];
  samples: Sample[];
  /** The provider's traffic per second from the run's start (reads by path, writes, 429s). */
  traffic: TrafficSecond[];
  declaredReadbackRates: Record<string, number>;
  ledgerBytesPerEffect: number;
  historyBytesPerEffect: number;
  /** Where historyBytesPerEffect comes from: the cluster's history_node, or fetchHistory of a sample (dev server). */
  historyBytesFrom: string;
  audit: AuditReport;
  final: Record<string, number>;
  lookNow?: LookNowReport;
  /** The drain from the last look-now signal (from the provider back without a look-now) to the last settled. */
  drain?: DrainRatio;
  /** The same from the provider back: the operator's end to end, the look-now's own time included. */
  drainEndToEnd?: DrainRatio;
  /** The machine's 1, 5 and 15 minute load averages when the run began and when it ended (shared cores). */
  loadAverage: { start: number[]; end: number[] };
  /**
   * Worker CPU milliseconds per parked effect per hour while the outage held (their looks failing, retried): all of
   * the workers' CPU (gross), and less what they used idle before any effect (net; idlePerHour, all workers).
   */
  workerCpuMsPerWaitingEffectPerHour?: { gross: number; net: number; idlePerHour: number };
  /** The looks probe: history events and bytes per look and per wake (workflow v7: 0 per look). */
  looks?: LookCost;
  /** History events per waiting effect per day at each destination's default schedule, from the probe's per look. */
  historyEventsPerWaitingEffectPerDay?: Record<string, { looksPerDay: number; events: number }>;
  /**
   * One effect waiting for a person: its current run's events and bytes, the looks the ledger holds for it, and the
   * attempt its watchForObject is on (each look after the first of a watch is a retry, which writes no history).
   */
  waitingHistory?: { effectId: string; events: number; bytes: number; looks: number; watchAttempt: number };
}

const CLK_TCK = 100;
/** How long the workers' idle CPU is read before the outage. */
const IDLE_MEASURE_MS = 10_000;
const PAGE_MIB = 4096 / 1048576;

/** RSS (MiB) and CPU ticks of a process, from /proc. */
function processStat(pid: number): { rssMiB: number; ticks: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After the command: state(0) … utime(11) stime(12) … rss(21) in pages.
    return { ticks: Number(fields[11]) + Number(fields[12]), rssMiB: Number(fields[21]) * PAGE_MIB };
  } catch {
    return null;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `count` calls of `fn`, at most `concurrency` at once. */
async function pooled(count: number, concurrency: number, fn: (n: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) await fn(next++);
    }),
  );
}

/** One effect of the mix: half refunds at the keyed API, three in ten posts on the feed, one in five orders. */
function requestFor(n: number): { destination: string; request: Record<string, unknown> } {
  const id = `outage-${n}`;
  const slot = n % 10;
  if (slot < 5) return { destination: 'keyed-api', request: refundRequest(`refund:${id}`, 100 + n) };
  if (slot < 8) return { destination: 'social-feed', request: postRequest(`post:${id}`, `Outage post ${n}`) };
  return {
    destination: 'orders-sql',
    request: {
      effectId: `order:${id}`,
      destination: 'orders-sql',
      operation: 'order.create',
      payload: { customer: `cus_${n}`, sku: 'SKU-1', quantity: 1, amountCents: 1000 + n },
      approvedBy: 'ana@example.com',
      authorizationRef: 'ORDERS-1',
    },
  };
}

export async function runOutage(options: OutageOptions): Promise<OutageReport> {
  const opts = {
    target: 'cluster' as const,
    workers: 3,
    approvalConcurrency: 8,
    phaseTimeoutMs: 30 * 60_000,
    lookNow: 'dry-run' as LookNowMode,
    probeEffects: 3,
    probeWindowMs: 15_000,
    ...options,
    drainTimeoutMs: options.drainTimeoutMs ?? options.phaseTimeoutMs ?? 30 * 60_000,
  };
  const log = options.log ?? (() => {});
  const loadAtStart = loadavg();
  process.env[TEMPORAL_TARGET_ENV] = opts.target === 'cluster' ? 'cluster' : 'dev-server';
  let stack: Stack | undefined;
  let toxiproxy: ToxiproxyServer | undefined;
  let orders: OrdersDatabase | undefined;
  const workers: WorkerProcess[] = [];
  let temporalSql: postgres.Sql | undefined;
  try {
    log(
      `starting: the ${opts.target === 'cluster' ? 'cluster' : 'dev server'}, the ledger, the simulator, Toxiproxy, the orders database`,
    );
    [stack, toxiproxy, orders] = await Promise.all([
      // A short call timeout: a call the cut swallows becomes UNKNOWN in seconds. The readback cap stays the
      // destinations' own (hours), so an effect waiting for a person is not read back again during the run.
      startStack({ purpose: 'outage', callTimeoutMs: 3000, readbackMaxIntervalMs: 4 * 3_600_000 }),
      startToxiproxy(),
      createOrdersDatabase(),
    ]);
    const cluster = clusterOf(stack.env);
    if (opts.target === 'cluster' && !cluster) throw new Error('--target cluster, but the stack has no cluster');
    // The cluster's history lives in its PostgreSQL database (history_node); the dev server's is sampled instead.
    let history: postgres.Sql | undefined;
    if (cluster) {
      const temporalUrl = new URL(process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
      temporalUrl.pathname = `/${cluster.databases.temporal}`;
      history = postgres(temporalUrl.toString(), { max: 1, onnotice: () => {} });
      temporalSql = history;
    }
    const simulatorHost = new URL(stack.simulator.url).host;
    const ordersUpstream = new URL(orders.url);
    const [provider, ordersProxy] = await Promise.all([
      toxiproxy.proxy('provider', simulatorHost),
      toxiproxy.proxy('orders', `${ordersUpstream.hostname}:${ordersUpstream.port || 5432}`),
    ]);
    const ordersViaProxy = new URL(orders.url);
    ordersViaProxy.port = String(ordersProxy.port);
    const providerViaProxy = `http://127.0.0.1:${provider.port}`;
    log(`starting ${opts.workers} worker processes`);
    for (let n = 0; n < opts.workers; n++)
      workers.push(
        await startWorkerProcess(stack, providerViaProxy, {
          env: {
            EFFECT_LEDGER_ORDERS_DATABASE_URL: ordersViaProxy.toString(),
            ...(opts.maxCachedWorkflows ? { EFFECT_LEDGER_MAX_CACHED_WORKFLOWS: String(opts.maxCachedWorkflows) } : {}),
          },
        }),
      );
    const sql = stack.ledger.sql;
    const { simulator, effects } = stack;
    const ledgerBytes = async () =>
      Number((await sql<{ n: string }[]>`SELECT pg_database_size(current_database())::text AS n`)[0]?.n ?? 0);
    const historyBytes = async () =>
      history
        ? Number(
            (await history<{ n: string | null }[]>`SELECT sum(octet_length(data))::text AS n FROM history_node`)[0]
              ?.n ?? 0,
          )
        : 0;
    const ledgerBefore = await ledgerBytes();
    const historyBefore = await historyBytes();

    // Destinations where a readback that proves absence is followed by an automatic same-key retry.
    const retrying = Object.values(destinationContracts)
      .filter((c) => c.retryAfterProvenAbsence)
      .map((c) => c.name);
    // The workers' own CPU with nothing to do (pollers, the ledger reconciler), so the hold's can be told apart.
    const idleTicks = () => workers.reduce((n, w) => n + (processStat(w.child.pid ?? 0)?.ticks ?? 0), 0);
    const idleFrom = { ticks: idleTicks(), at: Date.now() };
    await sleep(IDLE_MEASURE_MS);
    const idleWorkerCpuMsPerHour =
      (((idleTicks() - idleFrom.ticks) / CLK_TCK) * 1000) / ((Date.now() - idleFrom.at) / 3_600_000);

    const began = Date.now();
    let recoveredAt: Date | null = null;
    const samples: Sample[] = [];
    const previous = new Map<number, { ticks: number; at: number }>();
    const sample = async (): Promise<Sample> => {
      const rows = await sql<{ stage: string; n: number }[]>`
        SELECT stage, count(*)::int AS n FROM effects GROUP BY stage ORDER BY stage`;
      const stages = Object.fromEntries(rows.map((r) => [r.stage, r.n]));
      let waitingForPerson = 0;
      if (recoveredAt) {
        const [row] = await sql<{ n: number }[]>`
          SELECT count(*)::int AS n FROM effects e
          WHERE e.stage = 'unknown'
            AND CASE (SELECT v.outcome FROM provider_evidence v WHERE v.effect_id = e.effect_id
                      ORDER BY v.evidence_id DESC LIMIT 1)
                  WHEN 'inconclusive' THEN true
                  -- Absence is a person's call only where no same-key retry follows it by itself.
                  WHEN 'absent' THEN NOT (e.destination IN ${sql(retrying)})
                  ELSE false
                END
            AND EXISTS (SELECT 1 FROM provider_evidence v WHERE v.effect_id = e.effect_id AND v.kind = 'readback'
                        AND v.recorded_at >= ${recoveredAt.toISOString()}::timestamptz)`;
        waitingForPerson = row?.n ?? 0;
      }
      const now = Date.now();
      const workerSamples = workers.map((w) => {
        const pid = w.child.pid ?? 0;
        const stat = processStat(pid);
        const before = previous.get(pid);
        if (stat) previous.set(pid, { ticks: stat.ticks, at: now });
        const cpuPercent =
          stat && before ? ((stat.ticks - before.ticks) / CLK_TCK / ((now - before.at) / 1000)) * 100 : 0;
        return { pid, rssMiB: Math.round(stat?.rssMiB ?? 0), cpuPercent: Math.round(cpuPercent) };
      });
      const s = { t: now - began, stages, waitingForPerson, workers: workerSamples };
      samples.push(s);
      return s;
    };
    const phases: PhaseReport[] = [];
    /** Samples every second until `done` says so; the phase's figures from its samples and the provider's counter. */
    const phase = async (name: PhaseName, done: (s: Sample) => boolean, timeoutMs = opts.phaseTimeoutMs) => {
      const startedMs = Date.now() - began;
      const workerTicks = () => workers.reduce((n, w) => n + (processStat(w.child.pid ?? 0)?.ticks ?? 0), 0);
      const ticksBefore = workerTicks();
      const from = samples.length;
      let last = await sample();
      const deadline = Date.now() + timeoutMs;
      while (!done(last) && Date.now() < deadline) {
        await sleep(1000);
        last = await sample();
        options.onSample?.(last, name);
      }
      const endedMs = Date.now() - began;
      const workerCpuMs = ((workerTicks() - ticksBefore) / CLK_TCK) * 1000;
      const own = samples.slice(from);
      const traffic = (await simulator.traffic(began + startedMs)).seconds.filter((s) => s.at < began + endedMs);
      const reads = traffic.map((s) => s.reads - s.limited);
      phases.push({
        name,
        startedMs,
        endedMs,
        stages: last.stages,
        peakRssMiB: workers.map((_, i) => Math.max(...own.map((s) => s.workers[i]?.rssMiB ?? 0))),
        meanCpuPercent: workers.map((_, i) =>
          Math.round(own.reduce((n, s) => n + (s.workers[i]?.cpuPercent ?? 0), 0) / Math.max(1, own.length)),
        ),
        peakReadsPerSecond: Math.max(0, ...traffic.map((s) => s.reads)),
        meanReadsPerSecond: reads.length ? reads.reduce((a, b) => a + b, 0) / ((endedMs - startedMs) / 1000) : 0,
        peakReadsPerSecondByDestination: Object.fromEntries(
          Object.keys(SIMULATED_DESTINATION_PATHS).map((d) => [d, Math.max(0, ...traffic.map((s) => readsAt(s, d)))]),
        ),
        limited: traffic.reduce((n, s) => n + s.limited, 0),
        workerCpuMs,
      });
      return last;
    };

    // ---- the cut: answers lost for the first half (the calls land, their answers do not come back), then the
    // requests themselves too (nothing lands): both kinds of UNKNOWN a real outage makes.
    log(`cutting the provider and the orders database; approving ${opts.effects} effects`);
    const cut = async (direction: 'downstream' | 'upstream') => {
      for (const proxy of [provider.proxy, ordersProxy.proxy])
        await proxy.addToxic({
          name: `cut_${direction}`,
          type: 'timeout',
          stream: direction,
          toxicity: 1,
          attributes: { timeout: 0 },
        });
    };
    await cut('downstream');
    const mix: Record<string, number> = {};
    const approving = pooled(opts.effects, opts.approvalConcurrency, async (n) => {
      if (n === Math.floor(opts.effects / 2)) await cut('upstream');
      const { destination, request } = requestFor(n);
      mix[destination] = (mix[destination] ?? 0) + 1;
      await effects.approve(request);
    });
    const parkStarted = Date.now();
    let approved = false;
    void approving.then(() => {
      approved = true;
    });
    const parkedSample = await phase('park', (s) => approved && (s.stages.unknown ?? 0) >= opts.effects);
    await approving;
    const parkMs = Date.now() - parkStarted;
    const parked = parkedSample.stages.unknown ?? 0;
    log(`parked ${parked} of ${opts.effects} in UNKNOWN in ${(parkMs / 1000).toFixed(1)} s`);

    const holdUntil = Date.now() + opts.holdMs;
    await phase('hold', () => Date.now() >= holdUntil);

    // ---- back, behind a rate limit.
    log(`the provider returns, limited to ${opts.providerRatePerSecond} requests/s`);
    await stack.simulator.rateLimit(opts.providerRatePerSecond, 1);
    recoveredAt = new Date();
    await toxiproxy.client.reset();
    const recoverStarted = Date.now();
    const settledWhen = (s: Sample) =>
      (s.stages.recorded ?? 0) + (s.stages.rejected ?? 0) + (s.stages.abandoned ?? 0) + s.waitingForPerson >=
      opts.effects;
    // The operator's move once the provider is back: every effect waiting in UNKNOWN looks now, not at its next
    // scheduled look (a dry run first, then one signal each: scripts/bulk-decide.ts, `effect decide --look-now`).
    const asking = opts.lookNow === 'none' ? Promise.resolve(undefined) : bulkLookNow(stack, opts.lookNow, log);
    const last = await phase('recover', settledWhen, opts.drainTimeoutMs);
    const seenSettledAt = Date.now();
    const settled = settledWhen(last);
    const lookNow = await asking;
    // The drain ends when the last effect settled, by the ledger: its row that settled it, not the sampler's loop
    // (a second apart, and slower on a loaded machine). Unsettled, the sampler's end is all there is.
    const endedAt = settled ? ((await lastSettledAt(sql, seenSettledAt)) ?? seenSettledAt) : seenSettledAt;
    const drainMs = Math.max(0, endedAt - recoverStarted);
    log(settled ? `settled in ${(drainMs / 1000).toFixed(1)} s` : `not settled after ${drainMs} ms`);
    const declared = Object.fromEntries(
      Object.keys(mix).map((d) => [
        d,
        destinationContracts[d]?.readbackRatePerSecond ?? DEFAULT_READBACK_RATE_PER_SECOND,
      ]),
    );
    const requestLog = await stack.simulator.requests();
    const ratioFrom = (from: DrainRatio['from'], fromMs: number) =>
      drainRatio(sql, requestLog, {
        from,
        fromMs,
        toMs: Math.max(fromMs, endedAt),
        declared,
        providerRatePerSecond: opts.providerRatePerSecond,
      });
    const drainEndToEnd = await ratioFrom('provider back', recoverStarted);
    const drain = lookNow ? await ratioFrom('last look-now signal', lookNow.lastSignalAtMs) : drainEndToEnd;
    const hold = phases.find((p) => p.name === 'hold');
    const holdHours = hold ? (hold.endedMs - hold.startedMs) / 3_600_000 : 0;
    const workerCpu =
      hold && parked && holdHours > 0
        ? {
            gross: hold.workerCpuMs / parked / holdHours,
            net: Math.max(0, hold.workerCpuMs - idleWorkerCpuMsPerHour * holdHours) / parked / holdHours,
            idlePerHour: idleWorkerCpuMsPerHour,
          }
        : undefined;

    const traffic = (await stack.simulator.traffic(began)).seconds;
    const ledgerBytesPerEffect = Math.round((await ledgerBytes()) - ledgerBefore) / opts.effects;
    const historyBytesPerEffect = history
      ? Math.round(((await historyBytes()) - historyBefore) / opts.effects)
      : await sampledHistoryBytes(stack.env.client, sql);
    const historyBytesFrom = history
      ? 'history_node (the whole run)'
      : "fetchHistory of up to 50 effects' latest runs (dev server)";

    // ---- v7's wait, measured on a few probe effects waiting for a person and looking every second (before the audit,
    // which cuts the destinations off again; they are abandoned once measured, so they end settled).
    const looks =
      opts.probeEffects > 0 ? await probeLooks(stack, workers, opts.probeEffects, opts.probeWindowMs, log) : undefined;
    const historyEventsPerWaitingEffectPerDay = looks
      ? Object.fromEntries(
          Object.keys(mix).map((d) => {
            // The product's default schedule: 10 minutes, doubling up to the destination's cap; a day at the cap.
            const looksPerDay = 86_400_000 / Math.max(600_000, destinationContracts[d]?.readbackMaxIntervalMs ?? 0);
            return [d, { looksPerDay, events: looksPerDay * looks.eventsPerLook }];
          }),
        )
      : undefined;

    // ---- the audit: every destination's objects against the ledger, and Temporal's view. Read without a limit,
    // with the workers cut off from the destinations again: the audit reads the ledger first and each workflow
    // after, so effects still settling meanwhile (a run stopped by its phase limit) would read as stuck or as
    // objects without facts. The workers keep running: they answer the audit's queries.
    await cut('upstream');
    await cut('downstream');
    await stack.simulator.rateLimit(null);
    // The audit's own connection on the cluster (as an operator's); the stack's client on the dev server.
    const client = cluster ? await connectTemporalClient(cluster.target) : stack.env.client;
    const report = await audit(sql, {
      destinations: [...destinationRecords(stack.simulator.url), ordersRecords(orders.url)],
      workflows: temporalProbe(client),
      // Unsettled, an effect still on its way is not a finding; duplicates and stuck effects still are.
      requireSettled: settled,
    });
    // A figure for the docs, not a verdict: a failure to read it leaves it out.
    const waitingHistory = await measureWaitingHistory(client, sql)
      .catch(() => undefined)
      .finally(() => (cluster ? closeTemporalClient(client) : undefined));
    const declaredReadbackRates = Object.fromEntries(
      Object.keys(mix).map((name) => [
        name,
        destinationContracts[name]?.readbackRatePerSecond ?? DEFAULT_READBACK_RATE_PER_SECOND,
      ]),
    );
    return {
      options: { ...opts },
      mix,
      parked,
      parkMs,
      drainMs,
      settled,
      phases,
      samples,
      traffic,
      declaredReadbackRates,
      ledgerBytesPerEffect: Math.round(ledgerBytesPerEffect),
      historyBytesPerEffect,
      historyBytesFrom,
      audit: report,
      final: last.stages,
      ...(lookNow ? { lookNow } : {}),
      drain,
      drainEndToEnd,
      loadAverage: { start: loadAtStart, end: loadavg() },
      ...(workerCpu ? { workerCpuMsPerWaitingEffectPerHour: workerCpu } : {}),
      ...(looks ? { looks } : {}),
      ...(historyEventsPerWaitingEffectPerDay ? { historyEventsPerWaitingEffectPerDay } : {}),
      ...(waitingHistory ? { waitingHistory } : {}),
    };
  } finally {
    await Promise.allSettled(workers.map((w) => w.kill()));
    await temporalSql?.end().catch(() => {});
    await Promise.allSettled([stack?.stop(), toxiproxy?.stop(), orders?.drop()]);
  }
}

/** Every effect waiting in UNKNOWN looks now: the dry run over visibility, then one look-now signal each. */
async function bulkLookNow(
  stack: Stack,
  mode: Exclude<LookNowMode, 'none'>,
  log: (line: string) => void,
): Promise<LookNowReport> {
  const t0 = Date.now();
  const request = {
    action: 'look-now' as const,
    where: "EffectStage = 'unknown'",
    actor: 'ops@example.com',
    reason: 'the provider is back',
  };
  const plan =
    mode === 'dry-run' || mode === 'dry-run-signals'
      ? await planBulk(stack.env.client, request)
      : {
          ...request,
          batch: 'outage',
          effects: (
            await stack.ledger.sql<{ effectId: string }[]>`
              SELECT effect_id AS "effectId" FROM effects WHERE stage = 'unknown' ORDER BY effect_id`
          ).map(({ effectId }) => ({ effectId, stage: 'unknown' })),
        };
  const planMs = Date.now() - t0;
  // dry-run-signals: as before the looks were reset (each a signal, a wake: about 10 history events), to compare.
  const outcomes = await sendBulk(stack.effects, plan, {
    concurrency: 16,
    ...(mode === 'dry-run-signals' ? { lookNowBy: 'signal' as const } : {}),
  });
  const lastSignalAtMs = Date.now();
  const sendMs = lastSignalAtMs - t0 - planMs;
  const count = (result: string) => outcomes.filter((o) => o.result === result).length;
  // A signal to an effect that settled between the dry run and its signal fails: it no longer waits, so that is
  // not a failure of the look-now. Anything else is.
  const failures = await Promise.all(
    outcomes
      .filter((o) => o.result === 'failed')
      .map(async (o) => {
        const { status } = await stack.env.client.workflow.getHandle(o.effectId).describe();
        return status.name === 'RUNNING' ? `${o.effectId}: ${o.detail}` : undefined;
      }),
  );
  const failed = failures.filter((f): f is string => f !== undefined);
  const report = {
    mode,
    planned: plan.effects.length,
    asked: count('asked'),
    skipped: count('skipped'),
    closedMeanwhile: count('failed') - failed.length,
    failed: failed.length,
    ...(failed.length ? { failures: failed.slice(0, 10) } : {}),
    planMs,
    sendMs,
    lastSignalAtMs,
  };
  log(
    `bulk look-now (${mode}): ${report.asked} of ${report.planned} asked (${mode === 'direct' ? 'ledger query' : 'dry run'} ${(planMs / 1000).toFixed(1)} s, ${mode === 'dry-run-signals' ? 'signals' : 'resets or signals'} ${(report.sendMs / 1000).toFixed(1)} s)`,
  );
  return report;
}

/**
 * When the last effect settled, by the ledger's clock: each effect's latest evidence, attempt or fact recorded by
 * `seenAt` (when the run saw every effect settled) is the row that settled it; the latest of those. Probe effects
 * come later and are left out.
 */
async function lastSettledAt(sql: postgres.Sql, seenAt: number): Promise<number | undefined> {
  const until = new Date(seenAt).toISOString();
  const [row] = await sql<{ at: Date | null }[]>`
    SELECT max(at) AS at FROM (
      SELECT recorded_at AS at, effect_id FROM provider_evidence
      UNION ALL SELECT started_at, effect_id FROM attempts
      UNION ALL SELECT recorded_at, effect_id FROM facts
    ) rows
    WHERE at <= ${until}::timestamptz AND effect_id NOT LIKE 'probe:%'`;
  return row?.at ? new Date(row.at).getTime() : undefined;
}

/**
 * The drain against the rates over [fromMs, toMs]: the requests each destination let through (the simulator's log;
 * orders-sql, one SELECT per look in the ledger) at its declared readback rate, and the provider's at its limit;
 * the longest is the least the drain could take.
 */
async function drainRatio(
  sql: postgres.Sql,
  requestLog: LoggedRequest[],
  window: {
    from: DrainRatio['from'];
    fromMs: number;
    toMs: number;
    declared: Record<string, number>;
    providerRatePerSecond: number;
  },
): Promise<DrainRatio> {
  const { fromMs, toMs } = window;
  const inWindow = requestLog.filter((r) => {
    const at = Date.parse(r.at);
    return at >= fromMs && at <= toMs;
  });
  const count = (requests: LoggedRequest[]): RequestCount => {
    const limited = requests.filter((r) => r.status === 429).length;
    return { letThrough: requests.length - limited, limited };
  };
  const requestsByDestination: Record<string, RequestCount> = {};
  for (const destination of Object.keys(window.declared)) {
    const prefix = SIMULATED_DESTINATION_PATHS[destination];
    if (prefix)
      requestsByDestination[destination] = count(
        inWindow.filter((r) => r.method === 'GET' && r.path.startsWith(prefix)),
      );
    else {
      const [row] = await sql<{ n: number }[]>`
        SELECT count(*)::int AS n FROM provider_evidence v JOIN effects e ON e.effect_id = v.effect_id
        WHERE v.kind = 'readback' AND e.destination = ${destination}
          AND v.recorded_at >= ${new Date(fromMs).toISOString()}::timestamptz
          AND v.recorded_at <= ${new Date(toMs).toISOString()}::timestamptz`;
      requestsByDestination[destination] = { letThrough: row?.n ?? 0, limited: 0 };
    }
  }
  const secondsAtDeclaredRate = Object.fromEntries(
    Object.entries(requestsByDestination).map(([d, n]) => [d, n.letThrough / (window.declared[d] ?? 1)]),
  );
  const providerRequests = count(inWindow);
  const secondsAtProviderLimit = providerRequests.letThrough / window.providerRatePerSecond;
  const bounds = [...Object.entries(secondsAtDeclaredRate), ['the provider limit', secondsAtProviderLimit] as const];
  const [boundBy, boundSeconds] = bounds.reduce((a, b) => (b[1] > a[1] ? b : a));
  const drainSeconds = (toMs - fromMs) / 1000;
  return {
    from: window.from,
    fromMs,
    toMs,
    drainSeconds,
    requestsByDestination,
    secondsAtDeclaredRate,
    providerRequests,
    secondsAtProviderLimit,
    boundSeconds,
    boundBy,
    ratio: boundSeconds > 0 ? drainSeconds / boundSeconds : Number.NaN,
  };
}

/** History bytes per effect on the dev server: fetchHistory of up to 50 effects' latest runs. */
async function sampledHistoryBytes(client: Client, sql: postgres.Sql): Promise<number> {
  const rows = await sql<
    { effectId: string }[]
  >`SELECT effect_id AS "effectId" FROM effects ORDER BY random() LIMIT 50`;
  const sizes = await Promise.all(
    rows.map(async ({ effectId }) => {
      const history = await client.workflow.getHandle(effectId).fetchHistory();
      return proto.temporal.api.history.v1.History.encode(history).finish().length;
    }),
  );
  return Math.round(sizes.reduce((a, b) => a + b, 0) / Math.max(1, sizes.length));
}

/**
 * A few lost posts waiting for a person, looking every second: what their looks and one wake of each kind add to
 * their histories (harness/bench/look-cost.ts), with the workers' CPU per look. Abandoned afterwards.
 */
async function probeLooks(
  stack: Stack,
  workers: WorkerProcess[],
  count: number,
  windowMs: number,
  log: (line: string) => void,
): Promise<LookCost> {
  const probe = stack.effectsWith({
    readbackIntervalMs: 1000,
    readbackMaxIntervalMs: 1000,
    readbacksPerRun: 1_000_000,
  });
  const ids = Array.from({ length: count }, (_, i) => `probe:looks-${i}`);
  await stack.simulator.fault('fail_before_commit', { path: '/social/v1/posts', count });
  for (const id of ids) await probe.approve(postRequest(id, `Probe post ${id}`));
  for (const id of ids)
    await waitFor(
      async () => (await liveStatus(stack, id)).awaiting?.startsWith('a human decision'),
      `${id} to wait for a person`,
      300_000,
    );
  const pids = new Set(workers.map((w) => w.child.pid));
  const cost = await measureLookCost(
    {
      client: stack.env.client,
      sql: stack.ledger.sql,
      effects: probe,
      cpu: () => cpuByRole({ workers: (p) => pids.has(p.pid) }),
      log,
    },
    ids,
    windowMs,
  );
  for (const id of ids) {
    // Their posts failed before commit (the probe's own fault): the script's word that none is there.
    await stack.effects.decide(id, 'abandon', {
      actor: 'ops@example.com',
      reason: 'the probe is measured',
      checkedAbsent: true,
    });
    await resultOf(stack, id, 300_000);
  }
  return cost;
}

/** One effect waiting for a person: its current run's history, its looks in the ledger, its watch's attempt. */
async function measureWaitingHistory(client: Client, sql: postgres.Sql): Promise<OutageReport['waitingHistory']> {
  const [row] = await sql<{ effectId: string; looks: number }[]>`
    SELECT e.effect_id AS "effectId",
           (SELECT count(*)::int FROM provider_evidence v WHERE v.effect_id = e.effect_id AND v.kind = 'readback') AS looks
    FROM effects e WHERE e.stage = 'unknown' AND e.effect_id NOT LIKE 'probe:%' ORDER BY e.effect_id LIMIT 1`;
  if (!row) return undefined;
  const { runId, raw } = await client.workflow.getHandle(row.effectId).describe();
  const history = await client.workflow.getHandle(row.effectId, runId).fetchHistory();
  const watch = (raw.pendingActivities ?? []).find((a) => a.activityType?.name === 'watchForObject');
  return {
    effectId: row.effectId,
    events: history.events?.length ?? 0,
    bytes: proto.temporal.api.history.v1.History.encode(history).finish().length,
    looks: row.looks,
    watchAttempt: watch?.attempt ?? 0,
  };
}
