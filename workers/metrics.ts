// effect-ledger's own Prometheus metrics (prom-client), served by the worker process when
// EFFECT_LEDGER_METRICS_ADDRESS is set. The SDK runtime's metrics (workflow/activity task latencies,
// poller counts, schedule-to-start) are Core's own endpoint: EFFECT_LEDGER_SDK_METRICS_ADDRESS (runtime.ts).
//   effect_ledger_effects{stage}                        gauge, read from the ledger at each scrape
//   effect_ledger_oldest_unknown_age_seconds            gauge, ledger: the oldest effect waiting in UNKNOWN
//   effect_ledger_oldest_unsettled_age_seconds          gauge, ledger: the oldest effect neither terminal nor
//                                                       in UNKNOWN (it should move on its own within minutes),
//                                                       or one the reconciler cannot start (since it first failed)
//   effect_ledger_unstartable_effects                   gauge, ledger: effects the reconciler cannot start
//   effect_ledger_reconciler_passes_total{outcome}      counter: this process's passes, completed, failed or
//                                                       stood_aside (a timer tick the schedule's pass made needless)
//   effect_ledger_reconciler_effects_total{result}      counter: effects its passes checked, resumed, could not start
//   effect_ledger_reconciler_pass_seconds               histogram: how long its completed passes took
//   effect_ledger_attempts_total{destination}           counter: attempt rows written (a request may leave)
//   effect_ledger_outcomes_total{destination,outcome}   counter: provider calls classified
//   effect_ledger_readbacks_total{destination,verdict}  counter: readbacks recorded
//   effect_ledger_decisions_total{destination,decision,accepted}  counter: decisions recorded
// The gauges are the ledger's, the same from every worker: aggregate them with max(), not sum().
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { EffectMetrics } from '../activities/effect-metrics.js';
import { EFFECT_STAGES } from '../domain/stages.js';
import { type StageCensus, stageCensus } from '../ledger/census.js';
import type { LedgerDb } from '../ledger/db.js';
import type { ReconcilerPassObserver } from './ledger-reconciler.js';

export interface WorkerMetrics {
  registry: Registry;
  /** What the activities count (passed to createEffectWorker as `metrics`). */
  effects: EffectMetrics;
  /** What the ledger reconciler's passes count (createEffectWorker's `reconcilerObserver`, and the timer's). */
  reconciler: ReconcilerPassObserver;
}

export function createWorkerMetrics(db: LedgerDb): WorkerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // prom-client collects every metric of a scrape at once: both gauges share one ledger read.
  let reading: Promise<StageCensus> | undefined;
  const census = () => {
    reading ??= stageCensus(db).finally(() => {
      reading = undefined;
    });
    return reading;
  };
  new Gauge({
    name: 'effect_ledger_effects',
    help: 'Effects in the ledger by stage (read from the ledger at each scrape; the same from every worker)',
    labelNames: ['stage'],
    registers: [registry],
    async collect() {
      const { byStage } = await census();
      for (const stage of EFFECT_STAGES) this.set({ stage }, byStage[stage] ?? 0);
    },
  });
  new Gauge({
    name: 'effect_ledger_oldest_unknown_age_seconds',
    help: 'Age of the oldest effect in UNKNOWN: nothing is sent until readback evidence or a person settles it (0 when none)',
    registers: [registry],
    async collect() {
      const { oldestUnknownSince } = await census();
      this.set(ageSeconds(oldestUnknownSince));
    },
  });
  new Gauge({
    name: 'effect_ledger_oldest_unsettled_age_seconds',
    help: 'Age in its stage of the oldest effect neither terminal nor in UNKNOWN (prepared, released, attempted, reconciled), or since the reconciler first failed to start one it still cannot start: these move on their own, so a large value means stuck (0 when none)',
    registers: [registry],
    async collect() {
      this.set(ageSeconds((await census()).oldestUnsettledSince));
    },
  });
  new Gauge({
    name: 'effect_ledger_unstartable_effects',
    help: "Effects the ledger reconciler's latest passes could not start (no workflow runs for them; `effect list --unstartable` says why)",
    registers: [registry],
    async collect() {
      this.set((await census()).unstartable);
    },
  });
  const passes = new Counter({
    name: 'effect_ledger_reconciler_passes_total',
    help: "This process's ledger reconciler passes, by outcome (completed, failed, stood_aside: a timer tick after which the schedule completed a pass)",
    labelNames: ['outcome'],
    registers: [registry],
  });
  const passEffects = new Counter({
    name: 'effect_ledger_reconciler_effects_total',
    help: "Effects this process's reconciler passes checked, resumed, and could not start (with why: the log)",
    labelNames: ['result'],
    registers: [registry],
  });
  const passSeconds = new Histogram({
    name: 'effect_ledger_reconciler_pass_seconds',
    help: "How long this process's completed ledger reconciler passes took",
    buckets: [0.05, 0.25, 1, 5, 15, 60, 300],
    registers: [registry],
  });
  const attempts = new Counter({
    name: 'effect_ledger_attempts_total',
    help: 'Attempt rows written (intent before send): a request may leave',
    labelNames: ['destination'],
    registers: [registry],
  });
  const outcomes = new Counter({
    name: 'effect_ledger_outcomes_total',
    help: 'Provider calls by outcome class (not_sent, confirmed, rejected, unknown)',
    labelNames: ['destination', 'outcome'],
    registers: [registry],
  });
  const readbacks = new Counter({
    name: 'effect_ledger_readbacks_total',
    help: 'Readbacks recorded, by verdict (found, absent, inconclusive)',
    labelNames: ['destination', 'verdict'],
    registers: [registry],
  });
  const paced = new Counter({
    name: 'effect_ledger_readbacks_paced_total',
    help: "Readbacks put off because the destination's readback turns were taken (its declared rate): alert when it keeps rising for one destination",
    labelNames: ['destination'],
    registers: [registry],
  });
  const decisions = new Counter({
    name: 'effect_ledger_decisions_total',
    help: 'Decisions recorded, accepted or refused',
    labelNames: ['destination', 'decision', 'accepted'],
    registers: [registry],
  });
  return {
    registry,
    effects: {
      attempt: (destination) => attempts.inc({ destination }),
      outcome: (destination, outcome) => outcomes.inc({ destination, outcome }),
      readback: (destination, verdict) => readbacks.inc({ destination, verdict }),
      readbackPaced: (destination) => paced.inc({ destination }),
      decision: (destination, decision, accepted) =>
        decisions.inc({ destination, decision, accepted: String(accepted) }),
    },
    reconciler: {
      passed(report) {
        passes.inc({ outcome: 'completed' });
        passEffects.inc({ result: 'checked' }, report.checked);
        passEffects.inc({ result: 'resumed' }, report.resumed);
        passEffects.inc({ result: 'could_not_start' }, report.couldNotStart);
        passSeconds.observe(report.durationMs / 1000);
      },
      failed: () => passes.inc({ outcome: 'failed' }),
      stoodAside: () => passes.inc({ outcome: 'stood_aside' }),
    },
  };
}

const ageSeconds = (since: Date | null) => (since ? Math.max(0, (Date.now() - since.getTime()) / 1000) : 0);

/** Splits "host:port" (IPv6 as "[::1]:9464"); a bare port binds 127.0.0.1. */
export function parseBindAddress(address: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(address) ?? /^()()(\d+)$/.exec(address);
  if (!match) throw new Error(`expected host:port, got ${JSON.stringify(address)}`);
  return { host: match[1] || match[2] || '127.0.0.1', port: Number(match[3]) };
}

/** Serves GET /metrics; port 0 picks a free port (the returned address says which). */
export async function serveMetrics(registry: Registry, address: string): Promise<{ address: string; server: Server }> {
  const { host, port } = parseBindAddress(address);
  const server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404).end();
      return;
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (error: unknown) => response.writeHead(500, { 'content-type': 'text/plain' }).end(String(error)),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  server.unref();
  const bound = server.address() as AddressInfo;
  return { address: `${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`, server };
}
