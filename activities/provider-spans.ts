// Spans of the activities (docs/tracing.md): each provider call — an adapter's send, readBack or lookup — is a span
// carrying the effect's coordinates and what came of it (the outcome class, the readback's verdict), around the
// spans its protocol makes (destinations/protocol-spans.ts); the activity's own span (the SDK's interceptor makes
// it) gets the same coordinates. Only the OpenTelemetry API is used here: without an SDK in the process every span
// is the API's no-op, and nothing is recorded or sent.
import { type Attributes, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { ReadbackResult, SendOutcome } from '../domain/destination-contract.js';
import { TRACE_ATTRIBUTES as A, TRACER_NAME } from '../domain/trace-attributes.js';

const tracer = trace.getTracer(TRACER_NAME);

/**
 * fn inside an active span that ends with it: a throw is recorded on it; `after` adds what the result says
 * (only when the span records).
 */
export function inSpan<T>(
  name: string,
  kind: SpanKind,
  attributes: Attributes,
  fn: (span: Span) => Promise<T>,
  after?: (result: T, span: Span) => void,
): Promise<T> {
  return tracer.startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      const result = await fn(span);
      if (after && span.isRecording()) after(result, span);
      return result;
    } catch (error) {
      const { name, code, cause } = (error ?? {}) as { name?: string; code?: unknown; cause?: { code?: unknown } };
      span.setAttribute('error.type', String(cause?.code ?? code ?? name ?? 'Error'));
      span.recordException(error as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error | null)?.message ?? String(error) });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** Where an effect's step stands: the attempt activity's coordinates. */
export interface StepCoordinates {
  effectId: string;
  step: string;
  revision?: number;
  attempt?: number;
  idempotencyKey?: string;
  destination?: string;
  operation?: string;
}

export function stepAttributes(c: StepCoordinates): Attributes {
  return {
    [A.effectId]: c.effectId,
    [A.step]: c.step,
    ...(c.revision === undefined ? {} : { [A.revision]: c.revision }),
    ...(c.attempt === undefined ? {} : { [A.attempt]: c.attempt }),
    ...(c.idempotencyKey === undefined ? {} : { [A.idempotencyKey]: c.idempotencyKey }),
    ...(c.destination === undefined ? {} : { [A.destination]: c.destination }),
    ...(c.operation === undefined ? {} : { [A.operation]: c.operation }),
  };
}

/** Marks the running activity's span (the SDK interceptor's) with these attributes. */
export function markActivity(attributes: Attributes): void {
  const span = trace.getActiveSpan();
  if (span?.isRecording()) span.setAttributes(attributes);
}

/** What a send's outcome says on a span: its class (an error status where a person may look: rejected, unknown). */
export function outcomeAttributes(outcome: SendOutcome, span?: Span): Attributes {
  if (span && (outcome.class === 'rejected' || outcome.class === 'unknown'))
    span.setStatus({ code: SpanStatusCode.ERROR, message: `${outcome.class}: ${outcome.detail.reason}` });
  return { [A.outcome]: outcome.class };
}

export function verdictAttributes(read: ReadbackResult): Attributes {
  return { [A.readbackVerdict]: read.outcome, [A.readbackCoverage]: read.coverage };
}

/** The adapter's send, as a span of its own with the attempt's coordinates and the outcome. */
export function sendSpan(c: StepCoordinates, send: () => Promise<SendOutcome>): Promise<SendOutcome> {
  return inSpan(`send ${c.destination}`, SpanKind.INTERNAL, stepAttributes(c), send, (outcome, span) =>
    span.setAttributes(outcomeAttributes(outcome, span)),
  );
}

/** The adapter's readBack, as a span with the verdict. */
export function readbackSpan(c: StepCoordinates, read: () => Promise<ReadbackResult>): Promise<ReadbackResult> {
  return inSpan(`readBack ${c.destination}`, SpanKind.INTERNAL, stepAttributes(c), read, (result, span) =>
    span.setAttributes(verdictAttributes(result)),
  );
}

/** The adapter's lookup of an object a person named. */
export function lookupSpan<T extends { exists: boolean }>(c: StepCoordinates, look: () => Promise<T>): Promise<T> {
  return inSpan(`lookup ${c.destination}`, SpanKind.INTERNAL, stepAttributes(c), look, (seen, span) =>
    span.setAttribute(A.lookupExists, seen.exists),
  );
}
