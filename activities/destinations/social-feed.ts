// social-feed — an EXAMPLE destination: a social network's post API, our provider simulator's /social/v1
// (harness/simulator/), declared through the declarative HTTP destination (http-destination.ts). Mechanism:
// none. It ignores idempotency keys (every POST creates a post) and offers only a paginated listing of recent
// posts: only the newest 100 are listed at all (documented limit), so readback scans and matches the released
// package, and partial coverage is real. Never retried automatically after UNKNOWN.
import { z } from 'zod';
import type { DestinationAdapter } from '../../domain/destination-contract.js';
import { cutText } from '../../domain/storable.js';
import { type HttpDestinationSpec, httpAdapter, httpContract, httpDestination } from './http-destination.js';
import { DEFAULT_PROVIDER_URL } from './keyed-api.js';

const post = z
  .object({
    channel: z.string().min(1).max(64),
    text: z.string().min(1).max(2000),
  })
  .strict();

export const socialFeedSpec: HttpDestinationSpec = {
  name: 'social-feed',
  baseUrl: ({ env }) => env.EFFECT_LEDGER_PROVIDER_URL || DEFAULT_PROVIDER_URL,
  // No idempotencyKey: this provider ignores one, and sending one would suggest a protection that is not there.
  // A revision's post carries the same reference, and nothing there can confuse the two.
  reference: 'metadata.effect_id',
  operations: {
    'post.publish': {
      schema: post,
      path: '/social/v1/posts',
      target: (payload) => `POST /social/v1/posts channel=${String(payload.channel)}`,
    },
  },
  object: { path: '/social/v1/posts/{id}', noun: 'post', id: 'id', createdAt: 'created_at', bodySha256: 'body_sha256' },
  // The provider documents that listing shows only its newest 100 posts, 50 a page: absent only if the listing
  // reached back past the attempt, or ended short of that limit.
  readback: [
    {
      by: 'listing',
      path: '/social/v1/posts?page_size=50',
      items: 'data',
      nextCursor: 'next_cursor',
      cursorParam: 'cursor',
      maxPages: 2,
      listedAtMost: 100,
    },
  ],
  // No status overrides: without a key, a 429 or a 503 with Retry-After is unknown (the default for a key-less
  // declaration) — the request left, and a post made before a proxy's 503 would otherwise be posted again. Readback,
  // then a person. (A key-less declaration cannot declare either "not sent": the API refuses it.)
  callTimeoutMs: 10_000,
  // Nothing at the provider dedupes a second POST: only a human may approve one.
  retryAfterProvenAbsence: false,
  // Nothing tells us a post is still being created: a request that timed out may land a while later.
  absenceGraceMs: 60_000,
  // A post drops out of the newest-100 listing as others post: read back at least hourly to still see it.
  readbackMaxIntervalMs: 60 * 60 * 1000,
  // Readback requests: a readback scans up to two listing pages, so 10 requests are 5 readbacks a second,
  // about what a social API's read quota allows.
  readbackRatePerSecond: 10,
  describe(_operation, payload) {
    // Cut by code points: half a surrogate pair is not text, and the summary goes to the ledger.
    return `post on ${String(payload.channel)}: "${cutText(String(payload.text), 41)}"`;
  },
};

export const socialFeedContract = httpContract(socialFeedSpec);

/** The example as a destination: hosted wherever the worker runs (the simulator's URL from its environment). */
export const socialFeedDestination = httpDestination(socialFeedSpec);

/** `credential`: the feed's access token, from the worker's environment or a file (never from a payload). */
export function socialFeed(baseUrl: string, credential?: string): DestinationAdapter {
  return httpAdapter(socialFeedSpec, { baseUrl, ...(credential ? { credential } : {}) });
}
