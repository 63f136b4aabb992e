// The declaration of an HTTP destination, as data (HttpDestinationSpec), and the small readers every part of the
// declarative HTTP destination shares: a value at a dot path, a path template filled from a body.

import type { DestinationContext } from '../../domain/destination.js';
import type { PayloadSchema, StepPlan } from '../../domain/destination-contract.js';
import type { KeyScope } from '../../domain/idempotency-key.js';
import type { CreatedAtDeclaration } from './http-time.js';

/** One operation that leaves as one request. Evaluated at approval (the release holds the body), sent by the worker. */
export interface HttpOperation {
  /** The approved payload's schema (a zod schema is one). */
  schema: PayloadSchema;
  method?: 'POST' | 'PUT' | 'PATCH';
  /** Under the base URL; `{field}` is filled from the released body (a dot path), URL-encoded: `/v1/charges/{charge}/refunds`. */
  path: string;
  /**
   * The body that leaves, from the payload and the step's reference (the effect ID for a main step). Default: the
   * payload with the reference stamped at the destination's `reference` path. It must carry the reference there.
   */
  body?: (payload: Record<string, unknown>, reference: string) => Record<string, unknown>;
  /** What readback must match, in words (a revision may not change it). Default: the method and the filled path. */
  target?: (payload: Record<string, unknown>) => string;
}

/** An operation made of several outbound steps (on this destination or others): its schema and its split. */
export interface HttpPlan {
  schema: PayloadSchema;
  steps: (payload: Record<string, unknown>) => StepPlan[];
}

export interface HttpIdempotencyKey {
  /** The request header the key travels in, e.g. `Idempotency-Key`. */
  header: string;
  /** How long the provider remembers a key (its documentation: Stripe 24 h). */
  retentionSeconds: number;
  /** `revision` when the provider refuses a key that returns with other parameters (400/409); else `effect`. */
  scope: KeyScope;
  /** The response header saying an answer was replayed for a known key, e.g. `Idempotent-Replayed`. */
  replayedHeader?: string;
}

/** Read back by the key: the provider's record of a key names the object it made, or says it is in flight. */
export interface KeyReadback {
  by: 'key';
  /** `{key}` is the idempotency key: `/v1/idempotency_keys/{key}`. A 404 means "not known (any more)". */
  path: string;
  /** The answer's field naming the object made under the key. */
  objectId: string;
  /** When the answer's field equals this, a request with the key is still being processed: inconclusive. */
  inFlight?: { field: string; equals: unknown };
}

/** Read back by the stamped reference, through a filter the provider applies over every object: complete coverage. */
export interface ReferenceReadback {
  by: 'reference';
  /** `{reference}` is the step's reference: `/v1/objects?limit=100&metadata[effect_id]={reference}`. */
  path: string;
  /** The answer's list of objects. */
  items: string;
  /** The answer's "more after this page" flag (`has_more`); optional with `nextPage`, whose absence ends the list. */
  hasMore?: string;
  /**
   * Where the answer holds an opaque token for the next page (Stripe's search: `next_page`), null or absent at the
   * end; `cursorParam` takes it. Without it, the next page is asked for after the last object's ID.
   */
  nextPage?: string;
  /** The query parameter taking the last object's ID (`starting_after`), or the `nextPage` token (`page`). */
  cursorParam: string;
  /** Pages read before the verdict is inconclusive (default 10). */
  maxPages?: number;
  /**
   * How long after a write the search may still not show the object (Stripe documents its Search API as lagging,
   * usually under a minute). The destination's `absenceGraceMs` must cover it: until then, finding nothing proves
   * nothing.
   */
  lagMs?: number;
}

/** Read back by scanning a bounded listing of recent objects for the reference and the body hash. */
export interface ListingReadback {
  by: 'listing';
  /** `/posts?page_size=50`: newest first. */
  path: string;
  items: string;
  /** The answer's cursor for the next page (absent or null at the end), and the parameter that takes it. */
  nextCursor: string;
  cursorParam: string;
  maxPages: number;
  /** The provider documents that it lists only its newest N objects: a listing that ends short of N is complete. */
  listedAtMost?: number;
  /**
   * How far the provider's clock may be off the ledger's (default DEFAULT_CLOCK_TOLERANCE_MS, a minute). The scan
   * ends "reached back past the attempt" only at a page whose every object is older than the attempt by more than
   * this: one old object (a pinned post) or a clock a few seconds behind never ends it early.
   */
  clockToleranceMs?: number;
}

export type HttpReadback = KeyReadback | ReferenceReadback | ListingReadback;

/** A status the provider's documentation classifies otherwise than the default table, and where it says so. */
export interface StatusOverride {
  class: 'not_sent' | 'rejected' | 'unknown';
  reason: string;
}

export interface HttpDestinationSpec {
  name: string;
  /** Where the API lives, or a function of the worker's environment (undefined: not hosted on this worker). */
  baseUrl: string | ((context: DestinationContext) => string | undefined);
  /** The key header; without it the destination honours no key (mechanism `none`: readback or a person decides). */
  idempotencyKey?: HttpIdempotencyKey;
  /** Where the step's reference is stamped in each body and read from each object: a dot path, `metadata.effect_id`. */
  reference: string;
  operations: Readonly<Record<string, HttpOperation>>;
  plans?: Readonly<Record<string, HttpPlan>>;
  /** An object as the API answers a create and a fetch. */
  object: {
    /** Its URL under the base URL, ending in `{id}`: `/v1/objects/{id}`. */
    path: string;
    /** What the API calls its objects, for the reasons an operator reads (default `object`: "no matching payment"). */
    noun?: string;
    /** Dot path of its ID (default `id`). */
    id?: string;
    /**
     * Its creation time (default `created_at`, ISO text): a dot path of ISO 8601 text, or the path with the format
     * the API writes it in — Stripe's `{ path: 'created', format: 'epoch-seconds' }`, or `epoch-ms`.
     */
    createdAt?: CreatedAtDeclaration;
    /**
     * The released body's sha256 as the object shows it: a field the API keeps, or a function computing it from
     * the object's fields (`bodySha256Of(…)`). What makes a readback match the exact package, not a look-alike.
     */
    bodySha256: string | ((object: Record<string, unknown>) => string | undefined);
  };
  /** Tried in order; the first that concludes answers. */
  readback: readonly HttpReadback[];
  /** Statuses the provider documents otherwise (a comment's worth of why in `reason`). */
  statuses?: Readonly<Record<number, StatusOverride>>;
  /** How the credential travels (default `Authorization: Bearer <credential>`). */
  credentialHeaders?: (credential: string) => Record<string, string>;
  callTimeoutMs: number;
  retryAfterProvenAbsence: boolean;
  absenceGraceMs: number;
  readbackMaxIntervalMs: number;
  /** Readbacks a second from all workers together (the contract's readbackRatePerSecond). */
  readbackRatePerSecond?: number;
  /** A few words on the target for the effect's summary (default: the operation and its target). */
  describe?: (operation: string, payload: Record<string, unknown>) => string;
}

export const DEFAULT_REFERENCE_PAGES = 10;

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The value at a dot path, or undefined. */
export function valueAt(value: unknown, path: string): unknown {
  let current = value;
  for (const part of path.split('.')) {
    if (!isRecord(current) || !Object.hasOwn(current, part)) return undefined;
    current = current[part];
  }
  return current;
}

/** A copy of `value` with `stamp` at the dot path (objects along it copied, never shared with the payload). */
export function stamped(value: Record<string, unknown>, path: string, stamp: string): Record<string, unknown> {
  const [head = '', ...rest] = path.split('.');
  const inner = value[head];
  return { ...value, [head]: rest.length ? stamped(isRecord(inner) ? inner : {}, rest.join('.'), stamp) : stamp };
}

/** `{name}` placeholders filled, URL-encoded; null when one has no usable value (none, empty, `.` or `..`). */
export function filled(template: string, lookup: (name: string) => unknown): string | null {
  let missing = false;
  const path = template.replace(/\{([^{}]+)\}/g, (_, name: string) => {
    const value = lookup(name);
    // `.` and `..` would move the request to another path once the URL is normalised: never a segment.
    if ((typeof value !== 'string' && typeof value !== 'number') || value === '.' || value === '..' || value === '') {
      missing = true;
      return '';
    }
    return encodeURIComponent(String(value));
  });
  return missing ? null : path;
}

export const withParam = (url: string, name: string, value: string) =>
  `${url}${url.includes('?') ? '&' : '?'}${name}=${encodeURIComponent(value)}`;

export function textAt(value: unknown, path: string): string | undefined {
  const found = valueAt(value, path);
  return typeof found === 'string' && found ? found : typeof found === 'number' ? String(found) : undefined;
}
