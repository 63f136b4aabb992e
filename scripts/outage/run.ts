// A provider outage at volume, on the cluster (Temporal persisted in PostgreSQL) with three worker processes:
// N effects approved across the keyed API, the key-less feed and the orders database (a real destination) while
// Toxiproxy cuts the provider and the orders database mid-call, so they park in UNKNOWN; the outage held; the
// provider back behind a rate limit (429 + Retry-After above R requests/s); then until every effect is recorded or
// waits for a person with a reason. Sampled every second: stages, each worker's RSS and CPU, the provider's
// traffic. Ends with the audit (objects at every destination against the ledger's facts, and Temporal's view).
// `npm run outage` prints it (scripts/outage.ts); test/cluster/outage.test.ts runs a small configuration.
import { readFileSync } from 'node:fs';
import proto from '@temporalio/proto';
import postgres from 'postgres';
import { destinationContracts } from '../../activities/destinations/registry.js';
import { closeTemporalClient } from '../../client/connection-close.js';
import { connectTemporalClient } from '../../client/temporal-connection.js';
import { DEFAULT_READBACK_RATE_PER_SECOND } from '../../domain/destination-contract.js';
import { type Stack, startStack } from '../../harness/local-stack.js';
import { postRequest, refundRequest } from '../../harness/sample-requests.js';
import { readsAt, SIMULATED_DESTINATION_PATHS, type TrafficSecond } from '../../harness/simulator/traffic.js';
import { clusterOf, TEMPORAL_TARGET_ENV } from '../../harness/temporal-target.js';
import { startWorkerProcess, type WorkerProcess } from '../../harness/worker-process.js';
import { createOrdersDatabase, type OrdersDatabase } from '../../stack/orders-db.js';
import { startToxiproxy, type ToxiproxyServer } from '../../stack/toxiproxy.js';
import { type AuditReport, audit } from '../audit/audit.js';
import { destinationRecords, ordersRecords } from '../audit/destination-records.js';
import { temporalProbe } from '../audit/workflow-probe.js';

export interface OutageOptions {
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
  audit: AuditReport;
  final: Record<string, number>;
  /**
   * One effect waiting for a person: its history's events and bytes, and those of its last readback cycle (from
   * the readback's ActivityTaskScheduled to the end: the readback, the wait's timer), what each later one adds.
   */
  waitingHistory?: { effectId: string; events: number; bytes: number; cycleEvents: number; cycleBytes: number };
}

const CLK_TCK = 100;
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
    workers: 3,
    approvalConcurrency: 8,
    phaseTimeoutMs: 30 * 60_000,
    ...options,
  };
  const log = options.log ?? (() => {});
  process.env[TEMPORAL_TARGET_ENV] = 'cluster';
  let stack: Stack | undefined;
  let toxiproxy: ToxiproxyServer | undefined;
  let orders: OrdersDatabase | undefined;
  const workers: WorkerProcess[] = [];
  let temporalSql: postgres.Sql | undefined;
  try {
    log('starting: the cluster, the ledger, the simulator, Toxiproxy, the orders database');
    [stack, toxiproxy, orders] = await Promise.all([
      // A short call timeout: a call the cut swallows becomes UNKNOWN in seconds. The readback cap stays the
      // destinations' own (hours), so an effect waiting for a person is not read back again during the run.
      startStack({ purpose: 'outage', callTimeoutMs: 3000, readbackMaxIntervalMs: 4 * 3_600_000 }),
      startToxiproxy(),
      createOrdersDatabase(),
    ]);
    const cluster = clusterOf(stack.env);
    if (!cluster) throw new Error('the outage runs on the cluster');
    const temporalUrl = new URL(process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
    temporalUrl.pathname = `/${cluster.databases.temporal}`;
    const history = postgres(temporalUrl.toString(), { max: 1, onnotice: () => {} });
    temporalSql = history;
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
      Number(
        (await history<{ n: string | null }[]>`SELECT sum(octet_length(data))::text AS n FROM history_node`)[0]?.n ?? 0,
      );
    const ledgerBefore = await ledgerBytes();
    const historyBefore = await historyBytes();

    // Destinations where a readback that proves absence is followed by an automatic same-key retry.
    const retrying = Object.values(destinationContracts)
      .filter((c) => c.retryAfterProvenAbsence)
      .map((c) => c.name);
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
      const from = samples.length;
      let last = await sample();
      const deadline = Date.now() + timeoutMs;
      while (!done(last) && Date.now() < deadline) {
        await sleep(1000);
        last = await sample();
        options.onSample?.(last, name);
      }
      const endedMs = Date.now() - began;
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
    const last = await phase('recover', settledWhen);
    const drainMs = Date.now() - recoverStarted;
    const settled = settledWhen(last);
    log(settled ? `settled in ${(drainMs / 1000).toFixed(1)} s` : `not settled after ${drainMs} ms`);

    const traffic = (await stack.simulator.traffic(began)).seconds;
    const ledgerBytesPerEffect = Math.round((await ledgerBytes()) - ledgerBefore) / opts.effects;
    const historyBytesPerEffect = Math.round(((await historyBytes()) - historyBefore) / opts.effects);

    // ---- the audit: every destination's objects against the ledger, and Temporal's view. Read without a limit,
    // with the workers cut off from the destinations again: the audit reads the ledger first and each workflow
    // after, so effects still settling meanwhile (a run stopped by its phase limit) would read as stuck or as
    // objects without facts. The workers keep running: they answer the audit's queries.
    await cut('upstream');
    await cut('downstream');
    await stack.simulator.rateLimit(null);
    const client = await connectTemporalClient(cluster.target);
    const report = await audit(sql, {
      destinations: [...destinationRecords(stack.simulator.url), ordersRecords(orders.url)],
      workflows: temporalProbe(client),
      // Unsettled, an effect still on its way is not a finding; duplicates and stuck effects still are.
      requireSettled: settled,
    });
    // A figure for the docs, not a verdict: a failure to read it leaves it out.
    const waitingHistory = await measureWaitingHistory(client, sql)
      .catch(() => undefined)
      .finally(() => closeTemporalClient(client));
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
      audit: report,
      final: last.stages,
      ...(waitingHistory ? { waitingHistory } : {}),
    };
  } finally {
    await Promise.allSettled(workers.map((w) => w.kill()));
    await temporalSql?.end().catch(() => {});
    await Promise.allSettled([stack?.stop(), toxiproxy?.stop(), orders?.drop()]);
  }
}

/** The history of one effect waiting for a person, and the events its last readback cycle added. */
async function measureWaitingHistory(
  client: Awaited<ReturnType<typeof connectTemporalClient>>,
  sql: postgres.Sql,
): Promise<OutageReport['waitingHistory']> {
  const [row] = await sql<{ effectId: string }[]>`
    SELECT effect_id AS "effectId" FROM effects WHERE stage = 'unknown' ORDER BY effect_id LIMIT 1`;
  if (!row) return undefined;
  const history = await client.workflow.getHandle(row.effectId).fetchHistory();
  const events = history.events ?? [];
  const size = (list: typeof events) => proto.temporal.api.history.v1.History.encode({ events: list }).finish().length;
  const readbacks = events
    .map((e, i) => (e.activityTaskScheduledEventAttributes?.activityType?.name === 'readBack' ? i : -1))
    .filter((i) => i >= 0);
  const cycle = events.slice(readbacks.at(-1) ?? events.length);
  return {
    effectId: row.effectId,
    events: events.length,
    bytes: size(events),
    cycleEvents: cycle.length,
    cycleBytes: size(cycle),
  };
}
