// Two numbers the byte-counting faults need, measured on the real server before the matrix runs: how many
// bytes a clean send carries each way (Toxiproxy's metrics), and the landing point — the fewest bytes of
// the server's answers a client must receive for the object to land (found by cutting the downstream at
// candidate points, several at a time, and counting). Toxiproxy's limit_data closes as soon as the limit
// is reached, so at the landing point itself whether the last request leaves first is a race; one byte
// more, and the connection closes only once the server has begun to answer the request that stored the
// object (faults.ts).
import { closeAdapter } from '../domain/destination.js';
import type { DestinationAdapter, DestinationContract } from '../domain/destination-contract.js';
import type { ToxiproxyServer } from '../stack/toxiproxy.js';
import { waitFor, within } from '../stack/wait-for.js';
import { retried } from './patience.js';
import { releasedPackage, sendRequest } from './requests.js';
import type { ConformanceServer } from './target.js';

export interface Calibration {
  /** Bytes a clean send sent to the server (over its whole connection). */
  upstreamBytes: number;
  /** Bytes the server answered a clean send with. */
  downstreamBytes: number;
  /** The fewest answer bytes after which the object lands: one more, and the connection closes inside the ack. */
  landingBytes: number;
  /** Sends the calibration made (each under its own reference; those that landed stay at the server). */
  probes: number;
}

export class CalibrationError extends Error {
  override readonly name = 'CalibrationError';
}

/** Candidate cut points tried at once in each round of the search. */
const PARALLEL_PROBES = 7;
/** After a cut send returns, how long a late landing is looked for (the server stores before it answers). */
const SETTLE_MS = 300;

export interface CalibrationInput {
  toxiproxy: ToxiproxyServer;
  server: ConformanceServer;
  /** The destination connected through a proxy at host:port. */
  connect: (address: string) => DestinationAdapter;
  contract: DestinationContract;
  /** Names the calibration's proxies and effect IDs. */
  tag: string;
  callTimeoutMs: number;
  sendSlackMs: number;
}

/** How many clean sends calibration tries before it calls the server or the adapter not ready. */
const CLEAN_TRIES = 3;

export async function calibrate(input: CalibrationInput): Promise<Calibration> {
  const { toxiproxy, server, connect, contract, tag, callTimeoutMs, sendSlackMs } = input;
  let probes = 0;

  async function probe(limit: number | null) {
    const n = probes++;
    const name = `${tag}-cal-${n}`;
    const reference = `${tag}.cal.${n}`;
    const { proxy, port } = await toxiproxy.proxy(name, server.upstream);
    if (limit !== null)
      await proxy.addToxic({
        name: 'limit',
        type: 'limit_data',
        stream: 'downstream',
        toxicity: 1,
        attributes: { bytes: limit },
      });
    let adapter: DestinationAdapter | undefined;
    try {
      adapter = connect(`127.0.0.1:${port}`);
      const pkg = releasedPackage(contract, server.sample, reference);
      const sent = await within(
        adapter.send(sendRequest(reference, reference, server.sample.operation, pkg, callTimeoutMs)),
        `${contract.name}'s calibration send`,
        callTimeoutMs + sendSlackMs,
      ).catch((error: unknown) => ({ class: 'threw', detail: { reason: String(error) } }) as const);
      let landed = await retried(() => server.count(reference));
      if (landed === 0 && limit !== null) {
        await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
        landed = await retried(() => server.count(reference));
      }
      return { name, reference, sent, landed };
    } finally {
      await proxy.remove();
      if (adapter) await closeAdapter(adapter);
    }
  }

  // A server just started, on a loaded machine, may answer its first sends late (an SMTP session past the call
  // timeout): the clean send is tried up to CLEAN_TRIES times, each under its own reference, before the server or
  // the adapter is called not ready.
  let clean = await probe(null);
  for (let tries = 1; clean.sent.class !== 'confirmed' && tries < CLEAN_TRIES; tries++) clean = await probe(null);
  if (clean.sent.class !== 'confirmed')
    throw new CalibrationError(
      `${contract.name}: a send with no fault was not confirmed (${clean.sent.class}: ${clean.sent.detail.reason}); the server or the adapter is not ready`,
    );
  if (clean.landed !== 1)
    throw new CalibrationError(
      `${contract.name}: count(${clean.reference}) is ${clean.landed} after one confirmed send; the counter must count the objects that carry the reference`,
    );
  // Toxiproxy counts a connection's bytes when it closes (the proxy's removal closed it).
  const carried = await waitFor(
    async () => {
      const first = await toxiproxy.bytes(clean.name);
      if (first.upstream === 0 || first.downstream === 0) return undefined;
      await new Promise((resolve) => setTimeout(resolve, 100));
      const again = await toxiproxy.bytes(clean.name);
      return again.upstream === first.upstream && again.downstream === first.downstream ? again : undefined;
    },
    `Toxiproxy's byte counts of ${contract.name}'s clean send`,
    10_000,
  );

  // The search: `lands` below is false, `lands` at hi is true (the clean send); narrow until they touch.
  let lo = -1;
  let hi = carried.downstream;
  if ((await probe(0)).landed > 0) hi = 0;
  else lo = 0;
  while (hi - lo > 1) {
    const step = (hi - lo) / (PARALLEL_PROBES + 1);
    const points = [...new Set(Array.from({ length: PARALLEL_PROBES }, (_, i) => Math.round(lo + step * (i + 1))))]
      .filter((p) => p > lo && p < hi)
      .sort((a, b) => a - b);
    if (points.length === 0) break;
    const landed = await Promise.all(points.map(async (p) => ({ p, landed: (await probe(p)).landed > 0 })));
    const firstLanding = landed.find((r) => r.landed)?.p ?? hi;
    lo = Math.max(lo, ...landed.filter((r) => !r.landed && r.p < firstLanding).map((r) => r.p));
    hi = firstLanding;
  }
  return { upstreamBytes: carried.upstream, downstreamBytes: carried.downstream, landingBytes: hi, probes };
}
