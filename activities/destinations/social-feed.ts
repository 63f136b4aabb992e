// social-feed: a social network's post API (our simulator's /social/v1). Mechanism: none. It ignores
// idempotency keys (every POST creates a post) and offers only a paginated listing of recent posts:
// only the newest 100 are listed at all (documented limit), so readback scans and matches the
// released package, and partial coverage is real. Never retried automatically after UNKNOWN.
import { z } from 'zod';
import type {
  DestinationAdapter,
  DestinationContract,
  LookupResult,
  ReadbackResult,
  SendOutcome,
} from '../../domain/destination-contract.js';
import { cutText } from '../../domain/storable.js';
import { foreignBodyVerdict, isExactObject, isForeignBody, type StampedObject } from './exact-match.js';
import { bearer, classifyErrorStatus, isOutcome, postJson } from './http-outcome.js';
import { getJson, objectIdFromUrl } from './http-read.js';

const post = z
  .object({
    channel: z.string().min(1).max(64),
    text: z.string().min(1).max(2000),
  })
  .strict();

/** The provider documents that listing shows only its newest 100 posts. */
const DOCUMENTED_LIST_LIMIT = 100;
const PAGE_SIZE = 50;
/** Clock skew allowed between our database and the provider when judging time windows. */
const SKEW_MS = 5_000;

interface Post extends StampedObject {
  id: string;
  created_at: string;
}

export const socialFeedContract: DestinationContract = {
  name: 'social-feed',
  mechanism: 'none',
  keyRetentionSeconds: null,
  // It honours no key: a revision's post carries the same reference, and nothing there can confuse the two.
  keyScope: 'effect',
  operations: { 'post.publish': post },
  callTimeoutMs: 10_000,
  // Nothing at the provider dedupes a second POST: only a human may approve one.
  retryAfterProvenAbsence: false,
  // Nothing tells us a post is still being created: a request that timed out may land a while later.
  absenceGraceMs: 60_000,
  // A post drops out of the newest-100 listing as others post: read back at least hourly to still see it.
  readbackMaxIntervalMs: 60 * 60 * 1000,
  buildPackage(effectId, _operation, payload) {
    return {
      target: `POST /social/v1/posts channel=${String(payload.channel)}`,
      body: { ...payload, metadata: { effect_id: effectId } },
    };
  },
  describe(_operation, payload) {
    // Cut by code points: half a surrogate pair is not text, and the summary goes to the ledger.
    return `post on ${String(payload.channel)}: "${cutText(String(payload.text), 41)}"`;
  },
};

const MAX_PAGES = Math.ceil(DOCUMENTED_LIST_LIMIT / PAGE_SIZE);

/** `credential`: the feed's access token, from the worker's environment or a file (never from a payload). */
export function socialFeed(baseUrl: string, credential?: string): DestinationAdapter {
  const auth = bearer(credential);
  const postUrl = (id: string) => `${baseUrl}/social/v1/posts/${id}`;
  return {
    ...socialFeedContract,
    async send({ package: pkg, timeoutMs }): Promise<SendOutcome> {
      // No Idempotency-Key: this provider ignores it, and sending one would suggest a protection that is not there.
      const answer = await postJson(`${baseUrl}/social/v1/posts`, pkg.body, auth, timeoutMs);
      if (isOutcome(answer)) return answer;
      const { status, headers, body } = answer;
      if (status >= 200 && status < 300) {
        const created = body as Partial<Post>;
        if (typeof created.id !== 'string')
          return { class: 'unknown', httpStatus: status, detail: { reason: '2xx without a post ID', body } };
        return {
          class: 'confirmed',
          httpStatus: status,
          externalId: created.id,
          externalUrl: postUrl(created.id),
          occurredAt: created.created_at ?? new Date().toISOString(),
          detail: { reason: 'posted', body },
        };
      }
      // 503 is not "not applied" here: this provider documents no such promise and nothing dedupes a
      // second POST, so a 503 (from the API or a proxy in front of it) may follow a post that was made.
      // Unknown: readback, then a human. (429 stays "not sent": rate limiting happens before processing.)
      if (status === 503)
        return {
          class: 'unknown',
          httpStatus: status,
          detail: { reason: 'HTTP 503 from a destination without keys: the post may have been made', body },
        };
      return classifyErrorStatus(status, body, headers.get('retry-after'));
    },

    async readBack(request): Promise<ReadbackResult> {
      const since = Date.parse(request.since) - SKEW_MS;
      let cursor: string | null = null;
      let scanned = 0;
      let reachedBack = false;
      const matches: Post[] = [];
      const foreign: string[] = [];
      for (let page = 0; page < MAX_PAGES; page++) {
        const listed: { status: 200; body: { data: Post[]; next_cursor: string | null } } | { status: 404 } =
          await getJson(
            `${baseUrl}/social/v1/posts?page_size=${PAGE_SIZE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
            request,
            auth,
          );
        if (listed.status === 404) throw new Error('post listing is missing at the provider');
        scanned += listed.body.data.length;
        matches.push(...listed.body.data.filter((p) => isExactObject(p, request)));
        foreign.push(...listed.body.data.filter((p) => isForeignBody(p, request)).map((p) => p.id));
        if (listed.body.data.some((p) => Date.parse(p.created_at) < since)) reachedBack = true;
        cursor = listed.body.next_cursor;
        if (matches.length || reachedBack || !cursor) break;
      }
      const [first, ...others] = matches.sort((a, b) => a.created_at.localeCompare(b.created_at));
      const method = 'listing_scan';
      if (first) {
        return {
          outcome: 'found',
          coverage: reachedBack || !cursor ? 'complete' : 'partial',
          externalId: first.id,
          externalUrl: postUrl(first.id),
          occurredAt: first.created_at,
          detail: {
            method,
            reason: 'a listed post carries our effect ID and body',
            scanned,
            duplicates: others.map((p) => p.id),
          },
        };
      }
      if (foreign.length) return foreignBodyVerdict(method, foreign, scanned);
      // Absent only if the listing reached back past the attempt, or ended short of the documented limit.
      if (reachedBack || (!cursor && scanned < DOCUMENTED_LIST_LIMIT)) {
        return {
          outcome: 'absent',
          coverage: 'complete',
          detail: { method, reason: 'the listing covers the attempt window and holds no matching post', scanned },
        };
      }
      return {
        outcome: 'inconclusive',
        coverage: 'partial',
        detail: {
          method,
          reason: `not among the newest ${scanned} posts, and the listing does not reach back to the attempt`,
          scanned,
        },
      };
    },

    resolveUrl: (url) => objectIdFromUrl(url, baseUrl, '/social/v1/posts/'),
    objectUrlShape: postUrl('<id>'),

    async lookup(externalId, request): Promise<LookupResult> {
      const found = await getJson<Post>(postUrl(encodeURIComponent(externalId)), request, auth);
      if (found.status === 404) return { exists: false };
      return {
        exists: true,
        externalId: found.body.id,
        externalUrl: postUrl(found.body.id),
        occurredAt: found.body.created_at,
        matchesRelease: isExactObject(found.body, request),
      };
    },
  };
}
