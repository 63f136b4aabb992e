// What the kit needs, beside a destination, to run it against its real server (docs/conformance.md): how to
// reach the server, the environment in which the destination's own connect() points at an address the kit
// chooses (a Toxiproxy proxy in front of the server), a counter of the objects that carry a reference, and
// something to send. A destinations module exports these as `conformance`, beside its destinations (its
// default export, the format EFFECT_LEDGER_DESTINATIONS loads).
import type { HttpDestinationSpec } from '../activities/destinations/http-destination.js';

export interface ConformanceTarget {
  /** Starts (or reaches) the destination's real server, for one run of the kit. */
  start(): Promise<ConformanceServer>;
}

export interface ConformanceServer {
  /** host:port of the connection the adapter's sends travel over: the kit's proxies stand in front of it. */
  upstream: string;
  /**
   * The worker environment in which the destination's connect() sends to `address` (host:port of a kit proxy)
   * instead of `upstream` (its reads may go there too): e.g. `{ PAYMENTS_URL: \`http://${address}\` }`. Laid
   * over the kit's own process.env; the credential comes from it as a worker's does
   * (EFFECT_LEDGER_CREDENTIAL_<NAME>). Called once per proxy: each connect() its own connections.
   */
  env(address: string): Readonly<Record<string, string | undefined>>;
  /**
   * How many objects the server holds that carry reference R (`E`, `E~step`, `E#r2`: the key the adapter
   * was given), read from the server itself, never through the adapter under test.
   */
  count(reference: string): Promise<number>;
  /** What to send: one of the destination's single-step operations, and a payload it accepts. */
  sample: { operation: string; payload: Record<string, unknown> };
  /**
   * A payload of the same operation and target that the server refuses definitively (4xx, 5xx SMTP reply, a
   * constraint): revision cells approve it, see it rejected, then revise it to `sample`. Without one, the kit
   * refuses revision 1 itself, before anything leaves.
   */
  refusedPayload?: Record<string, unknown>;
  /**
   * Where the protocol has a 5xx after commit: the next effectful request carrying `reference` is stored and
   * then answered 5xx. Without it the `5xx-after-commit` fault does not apply.
   */
  failAfterCommit?(reference: string): Promise<void>;
  /**
   * An HTTP API's shape, as httpDestination declares it (its spec; a hand-written adapter of an HTTP API may name
   * one too): where objects carry their ID, creation time and reference, its listings, searches and key. The
   * kit's proxy reads it to fault the provider's shape (clock, pinned item, search lag, forgotten key, 503, unix
   * times). Without it those faults do not apply.
   */
  declaration?: HttpDestinationSpec;
  stop(): Promise<void>;
}

export type ConformanceTargets = Readonly<Record<string, ConformanceTarget>>;

/** What a destinations module exports for the kit (a module may export other things too). */
export interface ConformanceModule {
  conformance?: ConformanceTargets;
}
