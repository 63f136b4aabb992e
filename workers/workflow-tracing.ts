// Sandbox code: bundled with the effect workflow when tracing is on (workers/tracing.ts), after the SDK's
// OpenTelemetry interceptors, whose spans are active when these run. Two things the SDK's do not do:
//
// - A person's decision is a span of the effect's trace. The person decides from another process (the CLI, the
//   Web UI, a service) whose call starts a trace of its own, or none; the workflow knows the effect's. So the
//   decision span is made here, a child of the run's span, linked to the call that delivered the decision.
// - The retry a person's approve-retry allowed is linked to that decision: the workflow records an accepted
//   decision (the recordDecision activity) before the retry's attempt, so the next attempt scheduled after it
//   carries the decision in a header, its scheduling span gets a link, and so does the attempt's activity span
//   (workers/tracing.ts reads the header).
//
// Deterministic like the workflow: span IDs come from the workflow's seeded random, times from its clock, and
// nothing here issues a command. State is per workflow run (the factory is called for each).
import { type Context, context, propagation, type SpanContext, trace } from '@opentelemetry/api';
import { defaultPayloadConverter } from '@temporalio/common';
import {
  type ActivityInput,
  type Next,
  type SignalInput,
  type UpdateInput,
  type WorkflowExecuteInput,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptorsFactory,
  type WorkflowOutboundCallsInterceptor,
  workflowInfo,
} from '@temporalio/workflow';
import type { EffectActivities } from '../activities/index.js';
import { TRACE_ATTRIBUTES as A, DECISION_TRACE_HEADER, TRACER_NAME } from '../domain/trace-attributes.js';
import { abandonSignal, approveRetrySignal, confirmDeliverySignal, decideUpdate } from '../workflows/contract.js';

const DECISION_SIGNALS = new Set([approveRetrySignal, confirmDeliverySignal, abandonSignal].map((s) => s.name));
const RECORD_DECISION: keyof EffectActivities = 'recordDecision';
const ATTEMPT: keyof EffectActivities = 'attemptOnce';

interface RunTrace {
  /** The run's context (its RunWorkflow span): decision spans are its children. */
  run?: Context;
  /** Decision spans by update ID (a decision by update is recorded under `update:<id>`). */
  byUpdate: Map<string, SpanContext>;
  /** approve-retry signals' decision spans, in arrival order: the order the run records them in. */
  retrySignals: SpanContext[];
  /** The accepted approve-retry the next attempt follows. */
  retryAfter?: SpanContext;
}

const tracer = trace.getTracer(TRACER_NAME);

/** A decision message handled inside a span of the effect's trace, linked to the span that delivered it. */
function decisionSpan<T>(state: RunTrace, kind: string, updateId: string | undefined, handle: () => Promise<T>) {
  const delivered = trace.getActiveSpan()?.spanContext();
  const links = delivered && trace.isSpanContextValid(delivered) ? [{ context: delivered }] : [];
  const attributes = {
    [A.effectId]: workflowInfo().workflowId,
    [A.decision]: kind,
    ...(updateId ? { temporalUpdateId: updateId } : {}),
  };
  return tracer.startActiveSpan(`decision ${kind}`, { links, attributes }, state.run ?? context.active(), (span) => {
    if (updateId) state.byUpdate.set(updateId, span.spanContext());
    else if (kind === approveRetrySignal.name) state.retrySignals.push(span.spanContext());
    return handle().finally(() => span.end());
  });
}

class DecisionInbound implements WorkflowInboundCallsInterceptor {
  constructor(private readonly state: RunTrace) {}

  execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    this.state.run = context.active();
    return next(input);
  }

  handleSignal(input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>): Promise<void> {
    if (!DECISION_SIGNALS.has(input.signalName)) return next(input);
    return decisionSpan(this.state, input.signalName, undefined, () => next(input));
  }

  handleUpdate(input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'handleUpdate'>): Promise<unknown> {
    if (input.name !== decideUpdate.name) return next(input);
    const kind = (input.args[0] as { decision?: unknown } | undefined)?.decision;
    return decisionSpan(this.state, typeof kind === 'string' ? kind : 'unknown', input.updateId, () => next(input));
  }
}

class RetryLink implements WorkflowOutboundCallsInterceptor {
  constructor(private readonly state: RunTrace) {}

  scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) {
    const { state } = this;
    if (input.activityType === RECORD_DECISION) {
      // An approve-retry recorded: under its update's ID, or the next approve-retry signal's (refused ones too).
      const { requestRef, kind, accepted } = (input.args[0] ?? {}) as Record<string, unknown>;
      if (kind === approveRetrySignal.name) {
        const ref = typeof requestRef === 'string' ? requestRef : '';
        const decision = ref.startsWith('update:')
          ? state.byUpdate.get(ref.slice('update:'.length))
          : state.retrySignals.shift();
        if (accepted === true && decision) state.retryAfter = decision;
      }
    } else if (input.activityType === ATTEMPT && state.retryAfter) {
      const decision = state.retryAfter;
      state.retryAfter = undefined;
      trace.getActiveSpan()?.addLink({ context: decision });
      const carrier: Record<string, string> = {};
      propagation.inject(trace.setSpanContext(context.active(), decision), carrier);
      return next({
        ...input,
        headers: { ...input.headers, [DECISION_TRACE_HEADER]: defaultPayloadConverter.toPayload(carrier) },
      });
    }
    return next(input);
  }
}

export const interceptors: WorkflowInterceptorsFactory = () => {
  const state: RunTrace = { byUpdate: new Map(), retrySignals: [] };
  return { inbound: [new DecisionInbound(state)], outbound: [new RetryLink(state)] };
};
