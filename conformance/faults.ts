// The fault matrix: what the network (Toxiproxy) or the server does to one send, and which step the send is.
// Every fault is scaled to the call timeout T, so a short T tests the same windows as a long one.
import type { Proxy as ToxicProxy } from 'toxiproxy-node-client';
import type { Calibration } from './calibration.js';
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
] as const;
export type FaultName = (typeof FAULTS)[number];

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

/** Whether a fault can be applied to this server at all. */
export function faultApplies(fault: FaultName, server: Pick<ConformanceServer, 'failAfterCommit'>): boolean {
  return fault !== '5xx-after-commit' || server.failAfterCommit !== undefined;
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
  }
}
