// Traces (docs/tracing.md): an effect is one trace, from `approve` through its workflow and activities to each
// provider call. effect-ledger's code speaks only the OpenTelemetry API, which records nothing until an SDK is
// installed. Our processes (the worker, the CLI, openEffectLedger, the demo) install one here from the standard
// OTEL_* variables, and only when they ask for traces (an OTLP endpoint, or OTEL_TRACES_EXPORTER): with none set,
// no SDK is even loaded, nothing is exported, and every span is the API's no-op. A process that already installed
// an SDK of its own keeps it; effect-ledger's spans go there.
import { type Attributes, ProxyTracerProvider, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api';
import type { Resource } from '@opentelemetry/resources';
import type { SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client/index.js';
import { TRACE_ATTRIBUTES as A, TRACER_NAME } from '../domain/trace-attributes.js';

/** effect-ledger's tracer on the process's provider (a no-op one until an SDK is installed). */
export function effectTracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

/** The exporters OTEL_TRACES_EXPORTER names (comma-separated), or undefined when it is unset. */
function exporterNames(env: NodeJS.ProcessEnv): string[] | undefined {
  const raw = env.OTEL_TRACES_EXPORTER?.trim();
  if (!raw) return undefined;
  return [...new Set(raw.split(',').map((name) => name.trim().toLowerCase()))].filter(Boolean);
}

/**
 * Whether the OTEL_* variables ask for traces: an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or an exporter other than `none` (OTEL_TRACES_EXPORTER); never with
 * OTEL_SDK_DISABLED=true.
 */
export function tracingRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const names = exporterNames(env);
  if (names) return names.some((name) => name !== 'none');
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

/** Whether some SDK's tracer provider is installed globally (ours or the application's). */
export function tracerProviderInstalled(): boolean {
  const delegate = (trace.getTracerProvider() as ProxyTracerProvider).getDelegate?.();
  // A fresh proxy's delegate is the API's no-op provider, a singleton.
  return delegate !== undefined && delegate !== new ProxyTracerProvider().getDelegate();
}

/** An SDK installed by startTracing: what the worker plugin hands the workflow spans to. */
export interface Tracing {
  provider: NodeTracerProvider;
  /** Where every span ends: the workflow's spans (made in the sandbox, passed out through a sink) too. */
  spanProcessor: SpanProcessor;
  resource: Resource;
  /** Exports what is still buffered, then stops. */
  shutdown(): Promise<void>;
}

let installed: Tracing | undefined;

/** The SDK startTracing installed globally in this process, if it did. */
export function activeTracing(): Tracing | undefined {
  return installed;
}

export interface StartTracingOptions {
  /** service.name unless OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) says otherwise. */
  serviceName?: string;
  /**
   * Install it as the process's tracer provider (default). false: only the context manager and the propagator
   * are installed (a span's context still reaches the headers); spans are made only with this provider's own
   * tracer (the bench traces one kind of effect beside another that is not).
   */
  global?: boolean;
}

/**
 * Installs an OpenTelemetry SDK when the OTEL_* variables ask for traces (tracingRequested), else returns
 * undefined and loads nothing. Reads OTEL_TRACES_EXPORTER (`otlp`, the default, and/or `console`),
 * OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL (`http/protobuf`, the default, `http/json` or `grpc`), the exporter's
 * own OTEL_EXPORTER_OTLP_* (endpoint, headers, timeout, compression), OTEL_SERVICE_NAME,
 * OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER[_ARG], OTEL_BSP_* and OTEL_PROPAGATORS. Installed globally once:
 * a second call returns the first SDK; an SDK the application installed itself is left alone (undefined).
 */
export async function startTracing({
  serviceName = 'effect-ledger',
  global = true,
}: StartTracingOptions = {}): Promise<Tracing | undefined> {
  if (!tracingRequested()) return undefined;
  if (global && installed) return installed;
  if (global && tracerProviderInstalled()) return undefined;
  const [{ NodeTracerProvider }, { BatchSpanProcessor }, { Resource, envDetectorSync }] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/resources'),
  ]);
  const exporters = await Promise.all((exporterNames(process.env) ?? ['otlp']).map(spanExporter));
  const spanProcessors = exporters.filter((e) => e !== undefined).map((e) => new BatchSpanProcessor(e));
  const resource = new Resource({ 'service.name': serviceName }).merge(envDetectorSync.detect());
  const provider = new NodeTracerProvider({ resource, spanProcessors });
  if (global) provider.register();
  else {
    const [{ context, propagation }, { AsyncLocalStorageContextManager }, { W3CTraceContextPropagator }] =
      await Promise.all([
        import('@opentelemetry/api'),
        import('@opentelemetry/context-async-hooks'),
        import('@opentelemetry/core'),
      ]);
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  }
  const tracing: Tracing = {
    provider,
    // The provider's own processor: every span it makes, and the workflow's, reach all the exporters.
    spanProcessor: provider.activeSpanProcessor,
    resource: provider.resource,
    async shutdown() {
      await provider.shutdown();
      if (installed === tracing) installed = undefined;
    },
  };
  if (global) installed = tracing;
  return tracing;
}

/** The exporter OTEL_TRACES_EXPORTER names; `none` is none, an unknown name is refused. */
async function spanExporter(name: string): Promise<SpanExporter | undefined> {
  if (name === 'none') return undefined;
  if (name === 'console') return new (await import('@opentelemetry/sdk-trace-base')).ConsoleSpanExporter();
  if (name !== 'otlp') throw new Error(`OTEL_TRACES_EXPORTER: ${JSON.stringify(name)} is not otlp, console or none`);
  const protocol = (
    process.env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ??
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL ??
    'http/protobuf'
  ).trim();
  switch (protocol) {
    case 'http/protobuf':
      return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter();
    case 'http/json':
      return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter();
    case 'grpc':
      return new (await import('@opentelemetry/exporter-trace-otlp-grpc')).OTLPTraceExporter();
    default:
      throw new Error(
        `OTEL_EXPORTER_OTLP_PROTOCOL: ${JSON.stringify(protocol)} is not http/protobuf, http/json or grpc`,
      );
  }
}

/**
 * The Temporal client interceptor that starts a span for each workflow start, signal, update and query and
 * carries its context to the workflow in a header, when this process traces (an SDK is installed); none
 * otherwise. `tracer`: a provider's own (startTracing({ global: false })).
 */
export function tracingClientInterceptors(tracer?: Tracer): { workflow: WorkflowClientInterceptor[] } | undefined {
  if (!tracer && !tracerProviderInstalled()) return undefined;
  return { workflow: [new OpenTelemetryWorkflowClientInterceptor(tracer ? { tracer } : {})] };
}

/**
 * approve as a span: the effect's trace begins here (the workflow's start carries it on). What the request
 * names is on it at once, what approval found (new or absorbed, the stage) when it answers.
 */
export function approveSpan<T extends { created: boolean; stage: string }>(
  tracer: Tracer,
  request: unknown,
  approve: () => Promise<T>,
): Promise<T> {
  const named = (request ?? {}) as { effectId?: unknown; destination?: unknown; operation?: unknown };
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
  const attributes: Attributes = {};
  for (const [key, value] of [
    [A.effectId, text(named.effectId)],
    [A.destination, text(named.destination)],
    [A.operation, text(named.operation)],
  ] as const)
    if (value !== undefined) attributes[key] = value;
  const name = ['approve', text(named.destination), text(named.operation)].filter(Boolean).join(' ');
  return tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      const result = await approve();
      span.setAttributes({ [A.created]: result.created, [A.stage]: result.stage });
      return result;
    } catch (error) {
      span.recordException(error as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error | null)?.message ?? String(error) });
      throw error;
    } finally {
      span.end();
    }
  });
}
