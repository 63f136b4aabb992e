// Tracing on the worker's side (docs/tracing.md), added to a worker by the plugin when its process traces
// (client/tracing.ts): Temporal's OpenTelemetry interceptors continue the trace `approve` began — the workflow's
// spans are made in the sandbox and handed out through a sink to the process's span processor, each activity
// execution (each retry attempt too) is a span under the workflow's span that scheduled it — and
// workflow-tracing.ts adds the person's decisions and links the retry to the decision that allowed it.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { propagation, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import type { Context as ActivityContext } from '@temporalio/activity';
import { defaultPayloadConverter } from '@temporalio/common';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  type OpenTelemetrySinks,
} from '@temporalio/interceptors-opentelemetry';
import {
  type ActivityExecuteInput,
  type ActivityInboundCallsInterceptor,
  type ActivityInterceptorsFactory,
  type InjectedSinks,
  type Next,
  Runtime,
  type WorkerOptions,
  type WorkflowBundleOption,
} from '@temporalio/worker';
import type { WorkflowInfo } from '@temporalio/workflow';
import type { Tracing } from '../client/tracing.js';
import { DECISION_TRACE_HEADER } from '../domain/trace-attributes.js';

const require = createRequire(import.meta.url);

/** The workflow interceptor modules of a traced bundle: the SDK's OpenTelemetry ones, then ours. */
export const TRACING_WORKFLOW_MODULES: readonly string[] = [
  require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
  fileURLToPath(new URL(`./workflow-tracing${extname(fileURLToPath(import.meta.url))}`, import.meta.url)),
];

/** The retry's attempt linked to the decision that allowed it; each activity span says which attempt it is. */
class DecisionLink implements ActivityInboundCallsInterceptor {
  constructor(private readonly ctx: ActivityContext) {}

  execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const span = trace.getActiveSpan();
    if (span?.isRecording()) {
      span.setAttribute('temporalActivityAttempt', this.ctx.info.attempt);
      const carried = input.headers[DECISION_TRACE_HEADER];
      const carrier = carried && (defaultPayloadConverter.fromPayload(carried) as Record<string, string>);
      const decision = carrier && trace.getSpanContext(propagation.extract(ROOT_CONTEXT, carrier));
      if (decision) span.addLink({ context: decision });
    }
    return next(input);
  }
}

/** The activity interceptors of a traced worker: the SDK's span around each execution, then the decision link. */
export function tracingActivityInterceptors(): ActivityInterceptorsFactory[] {
  return [
    (ctx) => ({
      inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
      outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
    }),
    (ctx) => ({ inbound: new DecisionLink(ctx) }),
  ];
}

/** A traced bundle's workflows hand their spans to `exporter`: a worker that does not trace drops them. */
const DROPPED: InjectedSinks<OpenTelemetrySinks> = { exporter: { export: { fn: () => {} } } };

/**
 * The workflow spans' sink: into the process's span processor, or dropped. The SDK's exporter copies the whole
 * workflow info onto each span (search attributes and memo among it, the effect's summary with them): each span
 * gets only which workflow run made it.
 */
export function tracingSinks(tracing: Tracing | undefined, sinks: WorkerOptions['sinks']): WorkerOptions['sinks'] {
  if (sinks?.exporter) return sinks;
  if (!tracing) return { ...sinks, ...DROPPED };
  const { export: sdk } = makeWorkflowExporter(tracing.spanProcessor, tracing.resource);
  const exporter: InjectedSinks<OpenTelemetrySinks>['exporter'] = {
    export: {
      fn: (info, spans) =>
        sdk.fn(
          pickInfo(info, ['namespace', 'taskQueue', 'workflowType', 'workflowId', 'runId', 'attempt']) as WorkflowInfo,
          spans,
        ),
    },
  };
  return { ...sinks, exporter };
}

function pickInfo(info: WorkflowInfo, keys: Array<keyof WorkflowInfo>): Partial<WorkflowInfo> {
  return Object.fromEntries(keys.map((k) => [k, info[k]]));
}

/**
 * A worker's options with tracing: the sinks always (a bundle made with tracing may run on a worker without it);
 * with `tracing`, the activity interceptors, and the workflow modules when the worker bundles its workflows itself
 * (a bundle made ahead must include them: bundleEffectWorkflows({ tracing: true }); one that does not is logged).
 */
export function traceWorker(options: WorkerOptions, tracing: Tracing | undefined): WorkerOptions {
  const sinks = tracingSinks(tracing, options.sinks);
  if (!tracing) return { ...options, sinks };
  const interceptors = options.interceptors ?? {};
  const bundles = !options.workflowBundle && options.workflowsPath !== undefined;
  if (options.workflowBundle && !bundleTraces(options.workflowBundle))
    Runtime.instance().logger.warn(
      'tracing is on, but the workflow bundle was made without its interceptors (bundleEffectWorkflows({ tracing: true })): the workflow and its activities will not continue the trace of approve',
      { taskQueue: options.taskQueue },
    );
  return {
    ...options,
    sinks,
    interceptors: {
      ...interceptors,
      activity: [...tracingActivityInterceptors(), ...(interceptors.activity ?? [])],
      ...(bundles ? { workflowModules: [...(interceptors.workflowModules ?? []), ...TRACING_WORKFLOW_MODULES] } : {}),
    },
  };
}

/** Whether a bundle made ahead includes workflow-tracing.ts (it names the decision header); unknown: assumed so. */
function bundleTraces(bundle: WorkflowBundleOption): boolean {
  try {
    const code = 'code' in bundle ? bundle.code : readFileSync(bundle.codePath, 'utf8');
    return code.includes(DECISION_TRACE_HEADER);
  } catch {
    return true;
  }
}
