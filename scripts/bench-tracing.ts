// `npm run bench:tracing`: the price of tracing (docs/tracing.md). The same happy effects, approved by this
// process and run by a worker process, with tracing off (no OTEL_* set: the no-op API) and on (OTLP/HTTP to a real
// Jaeger on loopback, every span exported), side by side: rounds alternate which goes first (ABBA), each kind on
// its own task queue and worker (the other paused), after a warm-up of each. Prints effects/s and CPU ms per effect
// by process: the worker, this approver, Temporal, PostgreSQL, the provider simulator and, traced, Jaeger.
//   npm run bench:tracing -- --effects 100 --rounds 2 --concurrency 10
import { randomBytes } from 'node:crypto';
import { Client } from '@temporalio/client';
import { Command, InvalidArgumentError } from 'commander';
import { EffectLedgerClient } from '../client/effect-ledger-client.js';
import { startTracing, tracingClientInterceptors } from '../client/tracing.js';
import { cpuByRole, cpuMsPerEffect, type Role } from '../harness/bench/cpu.js';
import { summarize, table } from '../harness/bench/report.js';
import { startJaeger } from '../harness/jaeger.js';
import { startStack } from '../harness/local-stack.js';
import { taskRequest } from '../harness/sample-requests.js';
import { startWorkerProcess, type WorkerProcess } from '../harness/worker-process.js';
import { DEPLOYMENT_NAME_ENV } from '../workers/deployment.js';

const int = (raw: string) => {
  const value = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(value >= 1)) throw new InvalidArgumentError('expected an integer ≥ 1');
  return value;
};
const opts = new Command('bench-tracing')
  .description('happy effects with tracing off and on (OTLP to a Jaeger on loopback): effects/s and CPU per effect')
  .option('--effects <n>', 'effects per round and kind', int, 100)
  .option('--rounds <n>', 'rounds of (off, on), alternating which goes first', int, 2)
  .option('--concurrency <n>', 'effects in flight', int, 10)
  .parse()
  .opts<{ effects: number; rounds: number; concurrency: number }>();

type Kind = 'off' | 'on';
const log = (line: string) => process.stderr.write(`bench-tracing: ${line}\n`);
const fmt = (v: number, digits = 1) => (Number.isFinite(v) ? v.toFixed(digits) : '-');
const mean = (values: number[]) => values.reduce((s, v) => s + v, 0) / (values.length || 1);

const jaeger = await startJaeger();
const stack = await startStack({ purpose: 'bench' });
const workers: Partial<Record<Kind, WorkerProcess>> = {};
try {
  const tag = randomBytes(3).toString('hex');
  const queue = (kind: Kind) => `bench-tracing-${kind}-${tag}`;
  const otel = {
    OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpHttpUrl,
    OTEL_SERVICE_NAME: 'effect-ledger-worker',
  };
  // Each kind its own task queue, deployment and build (the traced bundle is other code): neither takes the other's.
  workers.off = await startWorkerProcess(stack, stack.simulator.url, {
    env: { TEMPORAL_TASK_QUEUE: queue('off'), [DEPLOYMENT_NAME_ENV]: `bench-off-${tag}` },
  });
  workers.on = await startWorkerProcess(stack, stack.simulator.url, {
    env: { ...otel, TEMPORAL_TASK_QUEUE: queue('on'), [DEPLOYMENT_NAME_ENV]: `bench-on-${tag}` },
  });
  // This process approves both kinds: the traced approvals through a provider of their own (not the global one,
  // so the untraced approvals stay the API's no-op), exporting to the same Jaeger.
  Object.assign(process.env, { ...otel, OTEL_SERVICE_NAME: 'bench-approver' });
  const tracing = await startTracing({ global: false });
  if (!tracing) throw new Error('OTEL_EXPORTER_OTLP_ENDPOINT is set: tracing should have started');
  const tracer = tracing.provider.getTracer('effect-ledger');
  const tracedClient = new Client({
    connection: stack.env.connection,
    namespace: stack.namespace,
    interceptors: tracingClientInterceptors(tracer),
  });
  const clients: Record<Kind, EffectLedgerClient> = {
    off: new EffectLedgerClient({ client: stack.env.client, db: stack.ledger.db, taskQueue: queue('off') }),
    on: new EffectLedgerClient({ client: tracedClient, db: stack.ledger.db, taskQueue: queue('on'), tracer }),
  };

  const port = stack.env.address.split(':').at(-1);
  const database = new URL(stack.databaseUrl).pathname.slice(1);
  const jaegerPort = new URL(jaeger.queryUrl).port;
  const roles = (kind: Kind): Record<string, Role> => ({
    worker: (p) => p.pid === workers[kind]?.child.pid,
    'approver (this process)': (p) => p.pid === process.pid,
    'temporal server': (p) => p.cmdline.includes('start-dev') && p.cmdline.includes(`--port ${port} `),
    postgres: (p) => p.cmdline.startsWith('postgres:') && p.cmdline.includes(` ${database} `),
    simulator: (p) => p.ppid === process.pid && p.cmdline.includes('simulator/main.ts'),
    jaeger: (p) => p.cmdline.includes('jaeger') && p.cmdline.includes(`:${jaegerPort}`),
  });

  /** Only the kind measured polls: the other worker is stopped (SIGSTOP) meanwhile. */
  const measureOnly = (kind: Kind) => {
    for (const k of ['off', 'on'] as const) workers[k]?.child.kill(k === kind ? 'SIGCONT' : 'SIGSTOP');
  };

  async function run(kind: Kind, label: string, count: number) {
    measureOnly(kind);
    const latencies: number[] = [];
    const ended: Record<string, number> = {};
    const before = cpuByRole(roles(kind));
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(count, opts.concurrency) }, async () => {
        while (next < count) {
          const i = next++;
          const effectId = `tracing-${kind}:${tag}:${label}:${i}`;
          const t0 = performance.now();
          await clients[kind].approve(taskRequest(effectId, `request-${i}`));
          const { stage } = await clients[kind].result(effectId);
          latencies.push(performance.now() - t0);
          ended[stage] = (ended[stage] ?? 0) + 1;
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    // The traced run's spans still in the exporters' buffers are part of its price.
    if (kind === 'on') await tracing?.provider.forceFlush();
    const cpu = cpuMsPerEffect(before, cpuByRole(roles(kind)), count);
    const result = { kind, label, effectsPerSecond: count / seconds, p50: summarize(latencies).p50, cpu, ended };
    log(
      `${label} ${kind}: ${fmt(result.effectsPerSecond)} effects/s, p50 ${fmt(result.p50, 0)} ms, ended ${JSON.stringify(ended)}, CPU ms/effect ${Object.entries(
        cpu,
      )
        .map(([role, ms]) => `${role} ${fmt(ms)}`)
        .join(', ')}`,
    );
    return result;
  }

  log(
    `load before: ${(await import('node:os'))
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  for (const kind of ['off', 'on'] as const) await run(kind, 'warmup', Math.min(opts.effects, opts.concurrency * 3));
  const results: Awaited<ReturnType<typeof run>>[] = [];
  for (let round = 1; round <= opts.rounds; round++) {
    for (const kind of round % 2 === 1 ? (['off', 'on'] as const) : (['on', 'off'] as const))
      results.push(await run(kind, `r${round}`, opts.effects));
  }
  const of = (kind: Kind) => results.filter((r) => r.kind === kind);
  const roleNames = Object.keys(roles('off'));
  const cpuOf = (kind: Kind, role: string) => mean(of(kind).map((r) => r.cpu[role] ?? 0));
  const total = (kind: Kind) => roleNames.reduce((s, role) => s + cpuOf(kind, role), 0);
  const rate = (kind: Kind) => mean(of(kind).map((r) => r.effectsPerSecond));
  process.stdout.write(
    `${table(
      ['', 'tracing off', 'tracing on', 'on / off'],
      [
        ['effects/s (mean of rounds)', fmt(rate('off')), fmt(rate('on')), fmt(rate('on') / rate('off'), 2)],
        [
          'latency p50 ms (mean of rounds)',
          fmt(mean(of('off').map((r) => r.p50)), 0),
          fmt(mean(of('on').map((r) => r.p50)), 0),
          '',
        ],
        ...roleNames.map((role) => [
          `CPU ms/effect: ${role}`,
          fmt(cpuOf('off', role)),
          fmt(cpuOf('on', role)),
          cpuOf('off', role) > 0 ? fmt(cpuOf('on', role) / cpuOf('off', role), 2) : '',
        ]),
        ['CPU ms/effect: all of these', fmt(total('off')), fmt(total('on')), fmt(total('on') / total('off'), 2)],
      ],
    )}\n${opts.rounds} rounds × ${opts.effects} happy effects (keyed-api) per kind at concurrency ${opts.concurrency}; ` +
      `per round on/off: ${Array.from({ length: opts.rounds }, (_, i) => {
        const at = (kind: Kind) => results.find((r) => r.kind === kind && r.label === `r${i + 1}`)?.effectsPerSecond;
        return fmt((at('on') ?? Number.NaN) / (at('off') ?? Number.NaN), 2);
      }).join(', ')}; load after: ${(await import('node:os'))
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}\n`,
  );
  await tracing.shutdown();
} finally {
  for (const w of Object.values(workers)) {
    w?.child.kill('SIGCONT');
    await w?.kill();
  }
  await stack.stop();
  await jaeger.stop();
}
