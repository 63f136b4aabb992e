// The demo's traces (docs/tracing.md): a Jaeger on loopback (query API on 16686 when free) takes the demo's spans
// over OTLP, configured as any process of ours is, by the OTEL_* variables; the invoice's trace is then read back
// from Jaeger, printed as a tree with its API URL, and drawn (.data/demo/tracing-invoice.svg; with --screenshots docs/,
// the docs' picture).
// Jaeger built from its Go module has no web UI, hence the tree. Without a Jaeger binary the demo runs untraced.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTracing, type Tracing } from '../../client/tracing.js';
import { type JaegerServer, jaegerAvailable, startJaeger } from '../../harness/jaeger.js';
import { renderTreeSvg, renderTreeText, type SpanRecord } from '../../harness/trace-tree.js';
import { preferredPort } from '../../stack/free-port.js';
import { waitFor } from '../../stack/wait-for.js';

export const DEMO_SERVICE = 'effect-ledger-demo';

export interface DemoTraces {
  jaeger: JaegerServer;
  tracing: Tracing;
  stop(): Promise<void>;
}

/** Jaeger and this process's tracing to it, or undefined when no Jaeger binary is built (scripts/setup.sh). */
export async function startDemoTraces(): Promise<DemoTraces | undefined> {
  if (!jaegerAvailable()) return undefined;
  const jaeger = await startJaeger({ queryPort: await preferredPort(16686) });
  Object.assign(process.env, {
    OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpHttpUrl,
    OTEL_SERVICE_NAME: DEMO_SERVICE,
    OTEL_BSP_SCHEDULE_DELAY: '200',
  });
  const tracing = await startTracing();
  if (!tracing) {
    await jaeger.stop();
    return undefined;
  }
  return {
    jaeger,
    tracing,
    async stop() {
      await tracing.shutdown().catch(() => {});
      await jaeger.stop();
    },
  };
}

/** The effect's trace once its workflow's spans are in (they leave when it closes), as lines to print. */
export async function describeTrace(traces: DemoTraces, effectId: string, svgDir = '.data/demo'): Promise<string[]> {
  await traces.tracing.provider.forceFlush();
  const traceId = await waitFor(
    async () => (await traces.jaeger.findTraces(DEMO_SERVICE, { 'effect.id': effectId }))[0],
    `Jaeger to hold ${effectId}'s trace`,
    30_000,
  );
  const spans: SpanRecord[] = await waitFor(
    async () => {
      const found = await traces.jaeger.trace(traceId);
      return found.some((s) => s.name === 'RunWorkflow:effectWorkflow') ? found : undefined;
    },
    `the workflow's spans of ${effectId}`,
    30_000,
  );
  const lines = [
    `The invoice's trace (${spans.length} spans) in Jaeger, ${traces.jaeger.queryUrl}/api/traces/${traceId} (Jaeger's API; built from its Go module it has no web UI):`,
    renderTreeText(spans),
  ];
  mkdirSync(svgDir, { recursive: true });
  const file = join(svgDir, 'tracing-invoice.svg');
  writeFileSync(file, renderTreeSvg(spans, `${effectId}: one effect, one trace (Jaeger, from the demo)`));
  lines.push(`Drawn as a picture: ${file}`);
  return lines;
}
