// A Jaeger (v1 all-in-one, in-memory storage) on loopback, the real OTLP receiver of the tracing test and the
// demo: OTLP over HTTP and gRPC in, its query API out. Every port free and bound to 127.0.0.1; its own tracing
// is off (sampled never, and pointed at itself). Built into bin/ by scripts/setup.sh (scripts/build-jaeger.sh),
// or JAEGER_BIN. Built from the Go module, it has no web UI (its UI is another project's JavaScript): the
// query API is what the test reads, and harness/trace-tree.ts draws a trace.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { freePort } from '../stack/free-port.js';
import { spawnSupervised } from '../stack/reaper.js';
import { waitFor } from '../stack/wait-for.js';
import { projectRoot } from '../workers/config.js';
import { type SpanRecord, spansOfOtlpJson } from './trace-tree.js';

export interface JaegerServer {
  /** OTEL_EXPORTER_OTLP_ENDPOINT for an exporter over OTLP/HTTP (the default protocol). */
  otlpHttpUrl: string;
  /** The same over gRPC (OTEL_EXPORTER_OTLP_PROTOCOL=grpc). */
  otlpGrpcUrl: string;
  /** The query API's base URL (/api/...). */
  queryUrl: string;
  /** IDs of the traces holding a span of `service` with these attributes (Jaeger's tag search). */
  findTraces(service: string, attributes: Record<string, string>): Promise<string[]>;
  /** Every span of a trace Jaeger holds now (its OTLP-shaped API: links included). */
  trace(traceId: string): Promise<SpanRecord[]>;
  stop(): Promise<void>;
}

export function jaegerBinary(): string {
  const local = resolve(projectRoot, 'bin/jaeger-all-in-one');
  return process.env.JAEGER_BIN ?? (existsSync(local) ? local : 'jaeger-all-in-one');
}

export function jaegerAvailable(): boolean {
  const binary = jaegerBinary();
  return binary.includes('/')
    ? existsSync(binary)
    : Boolean(process.env.PATH?.split(':').some((d) => existsSync(`${d}/${binary}`)));
}

/**
 * Its seven ports are picked free one by one and bound only when it starts: another process (the suite runs several
 * files at once) may take one in between ("bind: address already in use"). Then it starts again on new ports.
 */
export async function startJaeger(ports: { queryPort?: number } = {}): Promise<JaegerServer> {
  for (let tries = 1; ; tries++) {
    try {
      return await startJaegerOnce(ports);
    } catch (error) {
      if (tries >= 3 || !/address already in use/.test(String(error))) throw error;
    }
  }
}

async function startJaegerOnce(ports: { queryPort?: number }): Promise<JaegerServer> {
  const taken = new Set<number>();
  // Seven distinct ports: a port just released may be handed out again by the next ask.
  const distinct = async (): Promise<number> => {
    for (;;) {
      const n = await freePort();
      if (!taken.has(n)) {
        taken.add(n);
        return n;
      }
    }
  };
  const port = async () => `127.0.0.1:${await distinct()}`;
  const admin = await port();
  const collectorGrpc = await port();
  const collectorHttp = await port();
  const otlpGrpc = await port();
  const otlpHttp = await port();
  const queryGrpc = await port();
  const queryHttp = `127.0.0.1:${ports.queryPort ?? (await distinct())}`;
  const server = spawnSupervised(
    jaegerBinary(),
    [
      '--admin.http.host-port',
      admin,
      '--collector.grpc-server.host-port',
      collectorGrpc,
      '--collector.http-server.host-port',
      collectorHttp,
      '--collector.otlp.grpc.host-port',
      otlpGrpc,
      '--collector.otlp.http.host-port',
      otlpHttp,
      '--query.grpc-server.host-port',
      queryGrpc,
      '--query.http-server.host-port',
      queryHttp,
      '--memory.max-traces',
      '10000',
      '--log-level',
      'warn',
    ],
    {
      // Its own spans: never sampled, and were one sent, it would go to itself, not to a default port on the machine.
      env: { ...process.env, OTEL_TRACES_SAMPLER: 'always_off', OTEL_EXPORTER_OTLP_ENDPOINT: `http://${otlpGrpc}` },
    },
  );
  const queryUrl = `http://${queryHttp}`;
  // An exit ends the wait at once (a port taken meanwhile is retried by the caller), not after the 30 s.
  const exited = () => server.child.exitCode !== null;
  const started = waitFor(
    async () => {
      if (exited()) return true;
      const [query, health] = await Promise.all([
        fetch(`${queryUrl}/api/services`).catch(() => undefined),
        fetch(`http://${admin}/`).catch(() => undefined),
      ]);
      return Boolean(query?.ok && health?.ok);
    },
    'Jaeger to answer',
    30_000,
  ).then(() => {
    if (exited()) throw new Error(`jaeger (${jaegerBinary()}) exited: ${server.output() || 'no output'}`);
  });
  await started.catch(async (error: unknown) => {
    await server.stop();
    throw error;
  });
  const getJson = async (path: string) => {
    const response = await fetch(`${queryUrl}${path}`);
    if (response.status === 404) return undefined;
    if (!response.ok) throw new Error(`Jaeger answered ${response.status} to ${path}: ${await response.text()}`);
    return response.json() as Promise<unknown>;
  };
  return {
    otlpHttpUrl: `http://${otlpHttp}`,
    otlpGrpcUrl: `http://${otlpGrpc}`,
    queryUrl,
    async findTraces(service, attributes) {
      const query = new URLSearchParams({ service, tags: JSON.stringify(attributes), lookback: '2h', limit: '100' });
      const found = (await getJson(`/api/traces?${query}`)) as { data?: Array<{ traceID: string }> | null } | undefined;
      return (found?.data ?? []).map((t) => t.traceID);
    },
    async trace(traceId) {
      const found = await getJson(`/api/v3/traces/${traceId}`);
      return found ? spansOfOtlpJson((found as { result: unknown }).result) : [];
    },
    stop: () => server.stop(),
  };
}
