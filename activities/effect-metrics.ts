// What the activities count, per destination, for the worker's metrics endpoint (workers/metrics.ts turns
// these into Prometheus counters). An interface here keeps the activities free of any metrics library and
// lets tests and the demo run without one.
import type { OutcomeClass, ReadbackOutcome } from '../domain/outcomes.js';

export interface EffectMetrics {
  /** An attempt row was written: a request may leave. */
  attempt(destination: string): void;
  /** How a provider call (or a call lost with its activity) was classified. */
  outcome(destination: string, outcome: OutcomeClass): void;
  /** A readback's verdict, recorded. */
  readback(destination: string, verdict: ReadbackOutcome): void;
  /** A readback put off: the destination's readback turns were taken (optional: metrics written before it). */
  readbackPaced?(destination: string): void;
  /** A person's (or a malformed) decision, recorded as accepted or refused. */
  decision(destination: string, kind: string, accepted: boolean): void;
}

export const NO_METRICS: EffectMetrics = {
  attempt() {},
  outcome() {},
  readback() {},
  decision() {},
};
