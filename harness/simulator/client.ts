// The provider simulator as a separate process, and the reads a test or a capture makes of it: what
// objects exist at the provider, how many POSTs it received, and fault injection at its network boundary.
import type { ChildProcess } from 'node:child_process';
import type { Fault, FaultKind } from './faults.js';
import type { LoggedRequest, RequestFilter } from './request-log.js';
import { spawnSimulator } from './spawn.js';
import type { TrafficReport } from './traffic.js';

/** An object at the keyed API, as its control reads show it. */
export interface SimulatorObject {
  id: string;
  metadata: Record<string, string>;
  request: Record<string, unknown>;
  body_sha256: string;
  /** Its creation time: ISO text, unix seconds (Stripe's shape), unix ms. */
  created_at: string;
  created: number;
  created_ms: number;
}

export interface SimulatorProcess {
  url: string;
  child: ChildProcess;
  /** Every object at the keyed API (newest first). */
  objects(): Promise<SimulatorObject[]>;
  /** Every post on the key-less social feed, past what its public listing shows (the control API's view). */
  socialPosts(): Promise<Array<{ id: string; text?: string; metadata?: Record<string, string> }>>;
  /** Others post `count` times on the social feed, in one control call: older posts drop out of its newest-100 listing. */
  crowdSocialFeed(count: number): Promise<void>;
  stats(): Promise<{ posts: Record<string, number>; objects: number; socialPosts: number; keys: number }>;
  fault(
    kind: FaultKind,
    options?: { path?: string; delayMs?: number; count?: number; reference?: string; crowd?: number },
  ): Promise<void>;
  /** Faults queued and not yet consumed. */
  faults(): Promise<Fault[]>;
  /** Drops every queued fault; returns how many there were. */
  clearFaults(): Promise<number>;
  /** The provider's request log: every request its API received, oldest first. */
  requests(filter?: RequestFilter): Promise<LoggedRequest[]>;
  /** Answers held back by delay faults go out now; returns how many were held. */
  releaseDelays(): Promise<number>;
  /** How many requests a delay fault holds now (answers not yet sent, or commits not yet made). */
  held(): Promise<number>;
  retention(): Promise<number>;
  setRetention(keyRetentionMs: number): Promise<void>;
  /** The Stripe-shaped search (/v1/objects/search) runs this far behind writes. */
  setSearchLag(lagMs: number): Promise<void>;
  /** Above `requestsPerSecond` the API answers 429 with Retry-After (null lifts the limit). */
  rateLimit(requestsPerSecond: number | null, retryAfterSeconds?: number): Promise<void>;
  /** The provider's traffic per second (reads by path, writes, 429s), from `since` (epoch ms) on. */
  traffic(since?: number): Promise<TrafficReport>;
  /** Back to a fresh provider: no objects, posts, keys, faults, held answers or logged requests; default retention. */
  reset(): Promise<void>;
  stop(): Promise<void>;
}

async function json<T>(response: Promise<Response>): Promise<T> {
  const r = await response;
  if (!r.ok) throw new Error(`simulator answered ${r.status}: ${await r.text()}`);
  return (await r.json()) as T;
}

export async function startSimulator(args: string[] = []): Promise<SimulatorProcess> {
  const { url, child, stop } = await spawnSimulator(args);
  return {
    url,
    child,
    stop,
    async objects() {
      const all: SimulatorObject[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await json<{ data: typeof all; has_more: boolean }>(
          fetch(`${url}/v1/objects?limit=100${after ? `&starting_after=${after}` : ''}`),
        );
        all.push(...page.data);
        if (!page.has_more || page.data.length === 0) return all;
        after = page.data.at(-1)!.id;
      }
    },
    async socialPosts() {
      return (
        await json<{ data: Array<{ id: string; metadata?: Record<string, string> }> }>(
          fetch(`${url}/_control/social-posts`),
        )
      ).data;
    },
    async crowdSocialFeed(count) {
      await json(
        fetch(`${url}/_control/social-posts`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ count }),
        }),
      );
    },
    async faults() {
      return (await json<{ faults: Fault[] }>(fetch(`${url}/_control/faults`))).faults;
    },
    async clearFaults() {
      return (await json<{ cleared: number }>(fetch(`${url}/_control/faults`, { method: 'DELETE' }))).cleared;
    },
    async requests(filter = {}) {
      const query = new URLSearchParams();
      if (filter.method !== undefined) query.set('method', filter.method);
      if (filter.path !== undefined) query.set('path', filter.path);
      if (filter.since !== undefined) query.set('since', String(filter.since));
      return (await json<{ requests: LoggedRequest[] }>(fetch(`${url}/_control/requests?${query}`))).requests;
    },
    async releaseDelays() {
      return (await json<{ released: number }>(fetch(`${url}/_control/release-delays`, { method: 'POST' }))).released;
    },
    async held() {
      return (await json<{ held: number }>(fetch(`${url}/_control/delays`))).held;
    },
    async retention() {
      return (await json<{ keyRetentionMs: number }>(fetch(`${url}/_control/retention`))).keyRetentionMs;
    },
    async setSearchLag(lagMs) {
      await json(
        fetch(`${url}/_control/search-lag`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ lagMs }),
        }),
      );
    },
    async setRetention(keyRetentionMs) {
      await json(
        fetch(`${url}/_control/retention`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ keyRetentionMs }),
        }),
      );
    },
    async reset() {
      await json(fetch(`${url}/_control/reset`, { method: 'POST' }));
    },
    stats: () => json(fetch(`${url}/_control/stats`)),
    async rateLimit(requestsPerSecond, retryAfterSeconds) {
      await json(
        fetch(`${url}/_control/rate-limit`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ requestsPerSecond, ...(retryAfterSeconds ? { retryAfterSeconds } : {}) }),
        }),
      );
    },
    traffic: (since = 0) => json(fetch(`${url}/_control/traffic?since=${since}`)),
    async fault(kind, options = {}) {
      await json(
        fetch(`${url}/_control/faults`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ kind, ...options }),
        }),
      );
    },
  };
}
