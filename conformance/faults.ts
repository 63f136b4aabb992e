// The fault matrix: what the network (Toxiproxy), the server, or the provider's shape (the kit's own proxies)
// does to one send and what is read after it, and which step the send is. Every fault is scaled to the call
// timeout T, so a short T tests the same windows as a long one.
import type { Proxy as ToxicProxy } from 'toxiproxy-node-client';
import type { Calibration } from './calibration.js';
import type { ProviderShape } from './provider-shape.js';
import type { ConformanceServer } from './target.js';

export const FAULTS = [
  'none',
  'refused',
  'late-first-byte',
  'slow-session',
  'cut-mid-request',
  'reply-lost',
  'reset-on-ack',
  '5xx-after-commit',
  'send-outlives-deadline',
  '503-after-commit',
  'clock-behind',
  'clock-ahead',
  'pinned-old-item',
  'search-lag',
  'key-forgotten',
  'epoch-timestamps',
] as const;
export type FaultName = (typeof FAULTS)[number];

/** The faults of a provider's shape, made by the kit's HTTP proxy from the API's declaration (fault-proxy.ts). */
export const PROVIDER_FAULTS = [
  '503-after-commit',
  'clock-behind',
  'clock-ahead',
  'pinned-old-item',
  'search-lag',
  'key-forgotten',
  'epoch-timestamps',
] as const satisfies readonly FaultName[];
export type ProviderFault = (typeof PROVIDER_FAULTS)[number];

export function isProviderFault(fault: FaultName): fault is ProviderFault {
  return (PROVIDER_FAULTS as readonly FaultName[]).includes(fault);
}

export const FAULT_DESCRIPTIONS: Readonly<Record<FaultName, string>> = {
  none: 'no fault: the baseline every other row is read against',
  refused: 'the proxy does not listen: connection refused before any byte leaves',
  'late-first-byte': "the server's first byte arrives 2×T after it was sent, past the call timeout",
  'slow-session':
    'every server chunk 0.4×T late and sliced with 0.1×T between slices: each stays under every idle timeout, the whole session runs past T',
  'cut-mid-request': 'the connection is closed after half the bytes a clean send sends',
  'reply-lost':
    'the connection is closed as the server answers the request that stored the object: one byte of that answer passes',
  'reset-on-ack': 'as reply-lost, but a TCP reset',
  '5xx-after-commit': 'the server stores the object, then answers 5xx (where the protocol has one)',
  'send-outlives-deadline':
    "the kit's proxy holds each connection, nothing forwarded, for 3 × (T + the absence grace), then forwards it if the client is still connected: a send that returned at its deadline but left its request running lands it after the in-flight window, and after the retry",
  '503-after-commit':
    "the kit's proxy forwards the request (the object is made), then answers 503 with Retry-After: 1 (an API without a key: the resend it invites is a second object)",
  'clock-behind':
    "every creation time the API writes is 10 s earlier (its clock runs behind the ledger's); the first answer is lost, another writer's object lands just after ours, and the listing's first page ends before ours",
  'clock-ahead': 'as clock-behind, 10 s later (its clock runs ahead)',
  'pinned-old-item':
    "the listing's first page begins with an old object (the oldest listed, dated a day back) and ends before ours; the first answer is lost",
  'search-lag':
    'a reference search shows an object only once it is L old (the declared lagMs, or 3 × (T + the absence grace) where none is declared); the first answer is lost',
  'key-forgotten':
    "the API's reads are down until it has forgotten our key, after the declared retention; then a lookup of the key 404s and a request with it is new to the API; the first answer is lost",
  'epoch-timestamps': "every creation time the API writes is in unix seconds (Stripe's `created`)",
};

export const STEP_KINDS = ['main', 'further', 'revision'] as const;
export type StepKind = (typeof STEP_KINDS)[number];

/** The further step's name: its objects carry `E~further`. */
export const FURTHER_STEP = 'further';

export const STEP_KIND_DESCRIPTIONS: Readonly<Record<StepKind, string>> = {
  main: 'the main step: reference E',
  further: `a further step of a multi-step effect: reference E~${FURTHER_STEP}`,
  revision: 'revision 2 of a refused effect: reference E#r2 (destinations that key per revision)',
};

/**
 * How long `send-outlives-deadline` holds a connection: three in-flight windows, so the request lands after the
 * readback that follows the window and after the retry that readback allows (the worst case for the ledger).
 */
export function holdMs(callTimeoutMs: number, absenceGraceMs: number): number {
  return 3 * (callTimeoutMs + absenceGraceMs);
}

/**
 * The lag `search-lag` gives a search whose declaration names none: three in-flight windows, past the readback that
 * follows the window and the retry it allows.
 */
export function undeclaredSearchLagMs(callTimeoutMs: number, absenceGraceMs: number): number {
  return 3 * (callTimeoutMs + absenceGraceMs);
}

/** Why a fault does not apply to this destination (the table's "n/a"), or undefined when it does. */
export function notApplicable(
  fault: FaultName,
  server: Pick<ConformanceServer, 'failAfterCommit'>,
  shape: ProviderShape | undefined,
  window: { callTimeoutMs: number; absenceGraceMs: number },
): string | undefined {
  if (fault === '5xx-after-commit')
    return server.failAfterCommit ? undefined : 'no 5xx after commit in this protocol (the target offers none)';
  if (!isProviderFault(fault)) return undefined;
  if (!shape) return "not an HTTP API the target declares (its `declaration`): the kit's proxy cannot tell its fields";
  switch (fault) {
    case '503-after-commit':
      return shape.key ? 'a key dedupes the resend a 503 with Retry-After invites' : undefined;
    case 'clock-behind':
    case 'clock-ahead':
    case 'epoch-timestamps':
      if (fault === 'epoch-timestamps' && shape.createdAt.format !== 'assumed')
        return `the declaration names the time's format (${shape.createdAt.format}): the API is held to it`;
      return undefined;
    case 'pinned-old-item':
      return shape.listings.length ? undefined : 'no listing readback: nothing is read in time order';
    case 'search-lag':
      return shape.searches.length ? undefined : 'no reference readback: no search to lag';
    case 'key-forgotten':
      if (!shape.key) return 'honours no key: nothing to forget';
      if (shape.key.retentionSeconds * 1000 >= window.callTimeoutMs + window.absenceGraceMs)
        return `the key is kept ${shape.key.retentionSeconds} s, past the in-flight window: a cell cannot outlast it`;
      return undefined;
  }
}

export interface FaultContext {
  proxy: ToxicProxy;
  calibration: Calibration;
  callTimeoutMs: number;
  server: ConformanceServer;
  /** The reference the send carries (for the server's own 5xx). */
  reference: string;
}

async function toxic(proxy: ToxicProxy, name: string, type: string, stream: string, attributes: object, toxicity = 1) {
  await proxy.addToxic({ name, type, stream, toxicity, attributes } as Parameters<ToxicProxy['addToxic']>[0]);
}

/** Puts the fault on the proxy (or the server) before the send it is meant for opens its connection. */
export async function applyFault(
  fault: FaultName,
  { proxy, calibration, callTimeoutMs, server, reference }: FaultContext,
) {
  const t = callTimeoutMs;
  switch (fault) {
    case 'none':
      return;
    case 'refused':
      await proxy.update({ listen: proxy.listen, upstream: proxy.upstream, enabled: false });
      return;
    case 'late-first-byte':
      await toxic(proxy, 'late', 'latency', 'downstream', { latency: 2 * t, jitter: 0 });
      return;
    case 'slow-session':
      // Latency, then slices: a reply's first slice comes 0.4×T late, the others 0.1×T apart.
      await toxic(proxy, 'slow', 'latency', 'downstream', { latency: Math.round(0.4 * t), jitter: 0 });
      await toxic(proxy, 'sliced', 'slicer', 'downstream', {
        average_size: 16,
        size_variation: 0,
        delay: Math.round(0.1 * t * 1000),
      });
      return;
    case 'cut-mid-request':
      await toxic(proxy, 'cut', 'limit_data', 'upstream', { bytes: Math.floor(calibration.upstreamBytes / 2) });
      return;
    case 'reply-lost':
      await toxic(proxy, 'lost', 'limit_data', 'downstream', { bytes: calibration.landingBytes + 1 });
      return;
    case 'reset-on-ack':
      // A reset_peer toxic on a link makes Toxiproxy close both of its sockets with SO_LINGER 0 (a TCP reset);
      // at toxicity 0 it passes data through, so the close comes from limit_data, exactly as the ack returns.
      await toxic(proxy, 'rst', 'reset_peer', 'downstream', { timeout: 0 }, 0);
      await toxic(proxy, 'lost', 'limit_data', 'downstream', { bytes: calibration.landingBytes + 1 });
      return;
    case '5xx-after-commit':
      if (!server.failAfterCommit) throw new Error('the server has no 5xx after commit');
      await server.failAfterCommit(reference);
      return;
    default:
      // The kit's own proxies carry the others from the start (cells.ts).
      return;
  }
}
