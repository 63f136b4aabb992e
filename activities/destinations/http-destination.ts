// A destination declared, not written: an HTTP API that takes an idempotency key header (Stripe, Adyen, most
// payment and messaging APIs) or none, described as data — per operation its method, path and body; the key
// header with its retention and scope; where the step's reference is stamped; how an object is read back; the
// statuses the provider documents otherwise. The classification is this package's, the same for every API:
// "not sent" only when the request provably never left (a refused connection, 429, 503 with Retry-After),
// unknown after anything that may have reached the provider, rejected for a definitive 4xx.

import {
  type Destination,
  type DestinationContext,
  DestinationDefinitionError,
  DestinationResponseError,
  defineContract,
  defineDestination,
} from '../../domain/destination.js';
import {
  DEFAULT_CLOCK_TOLERANCE_MS,
  DEFAULT_READBACK_RATE_PER_SECOND,
  type DestinationAdapter,
  type DestinationContract,
  type LookupResult,
  MIN_READBACK_RATE_PER_SECOND,
  type PayloadSchema,
  READBACK_RUN_MS,
  READBACK_TURN_FACTOR,
  type ReadbackRequest,
  type ReadbackResult,
  type SendOutcome,
  type StepPlan,
} from '../../domain/destination-contract.js';
import type { KeyScope } from '../../domain/idempotency-key.js';
import { cutText } from '../../domain/storable.js';
import { foreignBodyVerdict } from './exact-match.js';
import { bearer, classifyErrorStatus, isOutcome, retryAfterMs, sendJson } from './http-outcome.js';
import { getJson, objectIdFromUrl, ProviderReadError } from './http-read.js';
import { type CreatedAtDeclaration, createdAtOf, readTime, TIME_FORMATS } from './http-time.js';

export type { CreatedAtDeclaration, TimeFormat } from './http-time.js';

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

const DEFAULT_REFERENCE_PAGES = 10;

function isRecord(value: unknown): value is Record<string, unknown> {
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
function stamped(value: Record<string, unknown>, path: string, stamp: string): Record<string, unknown> {
  const [head = '', ...rest] = path.split('.');
  const inner = value[head];
  return { ...value, [head]: rest.length ? stamped(isRecord(inner) ? inner : {}, rest.join('.'), stamp) : stamp };
}

/** `{name}` placeholders filled, URL-encoded; null when one has no usable value (none, empty, `.` or `..`). */
function filled(template: string, lookup: (name: string) => unknown): string | null {
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

const withParam = (url: string, name: string, value: string) =>
  `${url}${url.includes('?') ? '&' : '?'}${name}=${encodeURIComponent(value)}`;

function textAt(value: unknown, path: string): string | undefined {
  const found = valueAt(value, path);
  return typeof found === 'string' && found ? found : typeof found === 'number' ? String(found) : undefined;
}

/** What is wrong with a spec beyond its contract's fields; empty when it is sound. */
function specIssues(spec: HttpDestinationSpec): string[] {
  const issues: string[] = [];
  const pathish = /^\/[^\s]*$/;
  const dotPath = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
  if (typeof spec.baseUrl !== 'string' && typeof spec.baseUrl !== 'function')
    issues.push('baseUrl: a URL, or a function of the worker environment');
  if (typeof spec.reference !== 'string' || !/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(spec.reference))
    issues.push('reference: a dot path such as metadata.effect_id');
  for (const [name, op] of Object.entries(spec.operations ?? {})) {
    if (!isRecord(op) || typeof op.path !== 'string' || !pathish.test(op.path))
      issues.push(`operations.${name}.path: a path under the base URL, starting with "/"`);
    if (op?.method !== undefined && !['POST', 'PUT', 'PATCH'].includes(op.method))
      issues.push(`operations.${name}.method: POST, PUT or PATCH`);
  }
  if (!isRecord(spec.object) || typeof spec.object.path !== 'string' || !/^\/[^\s{}]*\{id\}$/.test(spec.object.path))
    issues.push('object.path: the object URL under the base URL, ending in {id}: /v1/objects/{id}');
  if (!spec.object || !['string', 'function'].includes(typeof spec.object.bodySha256))
    issues.push('object.bodySha256: the field holding the body hash, or a function computing it from the object');
  if (!Array.isArray(spec.readback) || spec.readback.length === 0)
    issues.push('readback: at least one way to read an object back (by key, by reference, or a listing)');
  for (const [i, read] of (spec.readback ?? []).entries()) {
    if (!isRecord(read) || typeof read.path !== 'string' || !pathish.test(read.path))
      issues.push(`readback[${i}].path: a path under the base URL, starting with "/"`);
    if (read?.by === 'key' && !spec.idempotencyKey) issues.push(`readback[${i}]: by key needs idempotencyKey`);
    if (read?.by === 'key' && !read.path.includes('{key}')) issues.push(`readback[${i}].path: must hold {key}`);
    if (read?.by === 'reference' && !read.path.includes('{reference}'))
      issues.push(`readback[${i}].path: must hold {reference} (the provider filters on it)`);
    if (read?.by === 'listing' && !(Number.isSafeInteger(read.maxPages) && read.maxPages >= 1))
      issues.push(`readback[${i}].maxPages: how many pages bound the scan (≥ 1)`);
    if (
      read?.by === 'listing' &&
      read.clockToleranceMs !== undefined &&
      !(Number.isSafeInteger(read.clockToleranceMs) && read.clockToleranceMs >= 0)
    )
      issues.push(`readback[${i}].clockToleranceMs: how far the provider's clock may be off ours, whole ms (≥ 0)`);
    if (read?.by === 'reference' && typeof read.hasMore !== 'string' && typeof read.nextPage !== 'string')
      issues.push(`readback[${i}].hasMore: where the answer says more pages follow (or nextPage: its next-page token)`);
    if (read?.by === 'reference' && typeof read.cursorParam !== 'string')
      issues.push(`readback[${i}].cursorParam: the query parameter taking the next page's cursor or token`);
    if (read?.by === 'reference' && read.lagMs !== undefined) {
      if (!(Number.isSafeInteger(read.lagMs) && read.lagMs >= 0))
        issues.push(`readback[${i}].lagMs: how long the search may lag writes, whole ms (≥ 0)`);
      else if (Number.isSafeInteger(spec.absenceGraceMs) && spec.absenceGraceMs < read.lagMs)
        issues.push(
          `absenceGraceMs: ${spec.absenceGraceMs} ms is shorter than readback[${i}].lagMs (${read.lagMs} ms): a search that has not caught up would be read as absence`,
        );
    }
    if (!['key', 'reference', 'listing'].includes(read?.by))
      issues.push(`readback[${i}].by: key, reference or listing`);
  }
  for (const [status, override] of Object.entries(spec.statuses ?? {})) {
    const code = Number(status);
    if (!Number.isInteger(code) || code < 300 || code > 599)
      issues.push(`statuses.${status}: a non-2xx HTTP status (2xx answers are parsed, never overridden)`);
    if (!['not_sent', 'rejected', 'unknown'].includes(override?.class))
      issues.push(`statuses.${status}.class: not_sent, rejected or unknown`);
    // "Not sent" resends the same request: safe only where the provider promises it did not process it (a 4xx
    // such as 429; a 3xx or 5xx may come after it was applied, from the API or a proxy in front of it) AND a key
    // still dedupes the resend should the promise be wrong.
    else if (override.class === 'not_sent' && (!spec.idempotencyKey || code < 400 || code > 499 || code === 409))
      issues.push(
        `statuses.${status}.class: not_sent ${
          !spec.idempotencyKey
            ? 'needs an idempotencyKey that dedupes the resend (this declaration has no key): declare unknown'
            : `only for a 4xx the provider documents as not processed, like 429 (a ${code} may follow a request that was applied or is in flight): declare unknown`
        }`,
      );
    // "Rejected" ends the effect (a revision may make a new request): never where our request may be applied.
    else if (override.class === 'rejected' && (code < 400 || code > 499 || code === 409))
      issues.push(
        `statuses.${status}.class: rejected only for a definitive 4xx refusal; a ${code} may follow a request that was applied or is still in flight (a revision would then make a second object): declare unknown`,
      );
    if (typeof override?.reason !== 'string' || !override.reason.trim())
      issues.push(`statuses.${status}.reason: where the provider documents it (a status is unknown otherwise)`);
  }
  const created = spec.object?.createdAt;
  if (
    created !== undefined &&
    !(typeof created === 'string' && dotPath.test(created)) &&
    !(isRecord(created) && typeof created.path === 'string' && dotPath.test(created.path))
  )
    issues.push(
      "object.createdAt: a dot path (ISO text), or { path, format } — e.g. { path: 'created', format: 'epoch-seconds' }",
    );
  else if (isRecord(created) && !TIME_FORMATS.includes(created.format as never))
    issues.push(`object.createdAt.format: one of ${TIME_FORMATS.join(', ')} (how the API writes the time)`);
  const key = spec.idempotencyKey;
  // Named as the user wrote it (the contract's own check would say keyRetentionSeconds).
  if (key && !(Number.isSafeInteger(key.retentionSeconds) && key.retentionSeconds >= 1))
    issues.push('idempotencyKey.retentionSeconds: how long the provider remembers a key, in whole seconds (≥ 1)');
  // Every request of a readback takes its turn at the declared rate, within the readback's run: one that cannot fit
  // them is retried for good, and a decision waiting behind it is never answered.
  const rate = spec.readbackRatePerSecond ?? DEFAULT_READBACK_RATE_PER_SECOND;
  const requests = (spec.readback ?? []).reduce(
    (sum, read) =>
      sum +
      (read?.by === 'key'
        ? 2
        : read?.by === 'reference'
          ? (read.maxPages ?? DEFAULT_REFERENCE_PAGES)
          : read?.by === 'listing' && Number.isSafeInteger(read.maxPages)
            ? read.maxPages + 1
            : 0),
    0,
  );
  const needsMs = (requests * READBACK_TURN_FACTOR * 1000) / rate;
  if (typeof rate === 'number' && rate >= MIN_READBACK_RATE_PER_SECOND && needsMs > READBACK_RUN_MS)
    issues.push(
      `readbackRatePerSecond: a readback makes up to ${requests} requests (readback's pages and lookups), which take ${Math.round(needsMs / 1000)} s of turns at ${rate} a second — more than the ${READBACK_RUN_MS / 1000} s a readback runs: raise the rate or lower maxPages`,
    );
  if (key && (typeof key.header !== 'string' || !/^[A-Za-z0-9-]+$/.test(key.header)))
    issues.push('idempotencyKey.header: a header name, e.g. Idempotency-Key');
  return issues;
}

const TARGET_MAX = 300;
const fitted = (text: string) => cutText(text, TARGET_MAX);

/** The destination's contract, from its declaration: what backend code validates approvals against. */
export function httpContract(spec: HttpDestinationSpec): DestinationContract {
  const issues = specIssues(spec);
  if (issues.length) throw new DestinationDefinitionError(JSON.stringify(spec.name), issues);
  const plans = spec.plans ?? {};
  const contract: DestinationContract = {
    name: spec.name,
    mechanism: spec.idempotencyKey ? 'idempotency_key' : 'none',
    keyRetentionSeconds: spec.idempotencyKey?.retentionSeconds ?? null,
    // A destination honouring no key cannot confuse a revision's request with the refused one's by its key.
    keyScope: spec.idempotencyKey?.scope ?? 'effect',
    operations: {
      ...Object.fromEntries(Object.entries(spec.operations).map(([name, op]) => [name, op.schema])),
      ...Object.fromEntries(Object.entries(plans).map(([name, plan]) => [name, plan.schema])),
    },
    ...(spec.plans
      ? { steps: Object.fromEntries(Object.entries(plans).map(([name, plan]) => [name, plan.steps])) }
      : {}),
    callTimeoutMs: spec.callTimeoutMs,
    retryAfterProvenAbsence: spec.retryAfterProvenAbsence,
    absenceGraceMs: spec.absenceGraceMs,
    readbackMaxIntervalMs: spec.readbackMaxIntervalMs,
    ...(spec.readbackRatePerSecond === undefined ? {} : { readbackRatePerSecond: spec.readbackRatePerSecond }),
    buildPackage(reference, operation, payload) {
      const op = Object.hasOwn(spec.operations, operation) ? spec.operations[operation] : undefined;
      if (!op)
        throw new Error(
          `${spec.name}: operation ${operation} is a plan of steps, or unknown; it never leaves as one request`,
        );
      const body = op.body ? op.body(payload, reference) : stamped(payload, spec.reference, reference);
      // Readback looks for the reference where the declaration says it is: a body without it could never be found.
      if (valueAt(body, spec.reference) !== reference)
        throw new Error(`${spec.name} ${operation}: the body must carry the step's reference at ${spec.reference}`);
      const path = filled(op.path, (field) => valueAt(body, field));
      if (path === null)
        throw new Error(
          `${spec.name} ${operation}: the body has no usable value for a field the path ${op.path} needs`,
        );
      return { target: fitted(op.target ? op.target(payload) : `${op.method ?? 'POST'} ${path}`), body };
    },
    describe(operation, payload) {
      if (spec.describe) return spec.describe(operation, payload);
      const op = Object.hasOwn(spec.operations, operation) ? spec.operations[operation] : undefined;
      return op?.target ? `${operation}: ${op.target(payload)}` : `${operation} on ${spec.name}`;
    },
  };
  return defineContract(contract);
}

export interface HttpConnection {
  baseUrl: string;
  credential?: string;
}

/** The adapter a worker hosts: the contract with its calls against `baseUrl`. */
export function httpAdapter(
  spec: HttpDestinationSpec,
  { baseUrl: base, credential }: HttpConnection,
): DestinationAdapter {
  const contract = httpContract(spec);
  const baseUrl = base.replace(/\/+$/, '');
  const auth = credential ? (spec.credentialHeaders ?? ((c) => bearer(c)))(credential) : {};
  const noun = spec.object.noun ?? 'object';
  const aNoun = `${/^[aeiou]/i.test(noun) ? 'an' : 'a'} ${noun}`;
  const idField = spec.object.id ?? 'id';
  const created = createdAtOf(spec.object.createdAt);
  const createdField = created.path;
  const objectPrefix = spec.object.path.slice(0, -'{id}'.length);
  const objectUrl = (id: string) => `${baseUrl}${objectPrefix}${encodeURIComponent(id)}`;
  const bodyHashOf = (object: Record<string, unknown>) =>
    typeof spec.object.bodySha256 === 'function'
      ? spec.object.bodySha256(object)
      : textAt(object, spec.object.bodySha256);
  const isOurs = (object: unknown, request: ReadbackRequest) =>
    isRecord(object) && valueAt(object, spec.reference) === request.effectId;
  const isExact = (object: unknown, request: ReadbackRequest) =>
    isOurs(object, request) && bodyHashOf(object as Record<string, unknown>) === request.bodySha256;
  /**
   * The object's creation time as ISO text; '' when it shows none (the fact's time is then when we saw it). A time it
   * shows that cannot be read as declared is a typed error naming the field: never handed on to the ledger.
   */
  const createdAt = (object: unknown): string => {
    const value = valueAt(object, createdField);
    if (value === undefined || value === null) return '';
    const read = readTime(value, created.format);
    if (read.ok) return read.iso;
    const id = textAt(object, idField);
    throw new DestinationResponseError(
      spec.name,
      'object.createdAt',
      `the ${noun}${id ? ` ${id}` : ''}'s ${createdField}: ${read.why}`,
      id,
    );
  };
  const itemsOf = (body: unknown, field: string, url: string): unknown[] => {
    const items = valueAt(body, field);
    if (!Array.isArray(items)) throw new ProviderReadError(`GET ${url}: the answer has no list at ${field}`);
    return items;
  };

  function found(
    object: unknown,
    method: string,
    reason: string,
    extra: { scanned?: number; duplicates?: string[] } = {},
    coverage: 'complete' | 'partial' = 'complete',
  ): ReadbackResult {
    const id = textAt(object, idField);
    // A matched object without its ID is not "found": there is nothing to record as the fact (the ledger refuses '').
    if (!id)
      throw new DestinationResponseError(
        spec.name,
        'object.id',
        `${aNoun} carrying our reference and body has no ID at ${idField}`,
      );
    return {
      outcome: 'found',
      coverage,
      externalId: id,
      externalUrl: objectUrl(id),
      // An object without its creation time: the fact's time is when we saw it.
      occurredAt: createdAt(object) || new Date().toISOString(),
      detail: { method, reason, ...extra },
    };
  }

  /** Matches among listed objects: the oldest exact one is the fact, the others duplicates for a person. */
  function conclude(
    matches: unknown[],
    foreign: string[],
    method: string,
    scanned: number,
    coverage: 'complete' | 'partial',
    reason: string,
  ) {
    const [first, ...others] = [...matches].sort((a, b) => createdAt(a).localeCompare(createdAt(b)));
    if (first)
      return found(
        first,
        method,
        reason,
        { scanned, duplicates: others.map((o) => textAt(o, idField) ?? `(${aNoun} without an ID)`) },
        coverage,
      );
    if (foreign.length) return foreignBodyVerdict(method, foreign, scanned);
    return undefined;
  }

  async function byKey(read: KeyReadback, request: ReadbackRequest): Promise<ReadbackResult | undefined> {
    const url = `${baseUrl}${filled(read.path, () => request.idempotencyKey)}`;
    const answer = await getJson<unknown>(url, request, auth);
    if (answer.status === 404) return undefined;
    if (read.inFlight && valueAt(answer.body, read.inFlight.field) === read.inFlight.equals)
      return {
        outcome: 'inconclusive',
        coverage: 'partial',
        detail: {
          method: 'idempotency_key',
          reason: 'a request with our key is still being processed',
          stillProcessing: true,
        },
      };
    const objectId = textAt(answer.body, read.objectId);
    if (!objectId) return undefined;
    const object = await getJson<unknown>(objectUrl(objectId), request, auth);
    if (object.status === 200 && isExact(object.body, request))
      return found(object.body, 'idempotency_key', `the key maps to ${aNoun} carrying our reference and body`);
    return undefined;
  }

  async function byReference(read: ReferenceReadback, request: ReadbackRequest): Promise<ReadbackResult> {
    const method = 'metadata_search';
    const first = `${baseUrl}${filled(read.path, () => request.effectId)}`;
    const matches: unknown[] = [];
    const foreign: string[] = [];
    let after: string | undefined;
    let scanned = 0;
    const pages = read.maxPages ?? DEFAULT_REFERENCE_PAGES;
    for (let page = 0; page < pages; page++) {
      const url = after ? withParam(first, read.cursorParam, after) : first;
      const listed = await getJson<unknown>(url, request, auth);
      if (listed.status === 404) throw new ProviderReadError(`GET ${url}: the listing is missing at the provider`);
      const items = itemsOf(listed.body, read.items, url);
      scanned += items.length;
      matches.push(...items.filter((o) => isExact(o, request)));
      foreign.push(
        ...items.filter((o) => isOurs(o, request) && !isExact(o, request)).map((o) => textAt(o, idField) ?? ''),
      );
      // The next page: after a token the answer names (null or absent at the end), or after the last object's ID.
      const token = read.nextPage === undefined ? undefined : textAt(listed.body, read.nextPage);
      const more =
        read.nextPage === undefined
          ? valueAt(listed.body, read.hasMore ?? 'has_more') === true
          : token !== undefined && (read.hasMore === undefined || valueAt(listed.body, read.hasMore) === true);
      if (!more || items.length === 0)
        return (
          conclude(
            matches,
            foreign,
            method,
            scanned,
            'complete',
            'found by the reference stamped in the body and the body hash',
          ) ?? {
            outcome: 'absent',
            coverage: 'complete',
            detail: { method, reason: `no ${noun} carries our reference and body`, scanned },
          }
        );
      after = read.nextPage === undefined ? textAt(items.at(-1), idField) : token;
    }
    return {
      outcome: 'inconclusive',
      coverage: 'partial',
      detail: { method, reason: `stopped after ${pages} pages`, scanned },
    };
  }

  async function byListing(read: ListingReadback, request: ReadbackRequest): Promise<ReadbackResult> {
    const method = 'listing_scan';
    const since = Date.parse(request.since) - (read.clockToleranceMs ?? DEFAULT_CLOCK_TOLERANCE_MS);
    let cursor: string | undefined;
    let scanned = 0;
    let reachedBack = false;
    let pages = 0;
    let head: string | undefined;
    const matches: unknown[] = [];
    const foreign: string[] = [];
    /** One page of the listing (the first without a cursor): its items and the cursor to the next. */
    const listPage = async (after?: string) => {
      const url = after ? withParam(`${baseUrl}${read.path}`, read.cursorParam, after) : `${baseUrl}${read.path}`;
      const listed = await getJson<unknown>(url, request, auth);
      if (listed.status === 404) throw new ProviderReadError(`GET ${url}: the listing is missing at the provider`);
      return { items: itemsOf(listed.body, read.items, url), next: textAt(listed.body, read.nextCursor) };
    };
    const headOf = (items: unknown[]) => (items[0] === undefined ? undefined : textAt(items[0], idField));
    for (let page = 0; page < read.maxPages; page++) {
      const { items, next } = await listPage(cursor);
      pages += 1;
      if (page === 0) head = headOf(items);
      scanned += items.length;
      matches.push(...items.filter((o) => isExact(o, request)));
      foreign.push(
        ...items.filter((o) => isOurs(o, request) && !isExact(o, request)).map((o) => textAt(o, idField) ?? ''),
      );
      // Past the attempt only when the whole page is: a pinned old object on the first page, or a listing not
      // strictly newest first, never ends the scan before the page that may hold ours.
      if (
        items.length > 0 &&
        items.every((o) => {
          const at = createdAt(o);
          return at !== '' && Date.parse(at) < since;
        })
      )
        reachedBack = true;
      cursor = next;
      if (matches.length || reachedBack || !cursor) break;
    }
    let seenAll = reachedBack || (!cursor && (read.listedAtMost === undefined || scanned < read.listedAtMost));
    // A listing that shows only its newest `listedAtMost` and came up short over several pages may have moved under
    // us: newer items pushed older ones out of its window between our pages, which looks like its end. It ended only
    // if its head is still the one the scan began with (items are added at the head).
    if (seenAll && !reachedBack && read.listedAtMost !== undefined && pages > 1 && !matches.length) {
      if (headOf((await listPage()).items) !== head) seenAll = false;
    }
    const verdict = conclude(
      matches,
      foreign,
      method,
      scanned,
      reachedBack || !cursor ? 'complete' : 'partial',
      `a listed ${noun} carries our reference and body`,
    );
    if (verdict) return verdict;
    if (seenAll)
      return {
        outcome: 'absent',
        coverage: 'complete',
        detail: { method, reason: `the listing covers the attempt window and holds no matching ${noun}`, scanned },
      };
    return {
      outcome: 'inconclusive',
      coverage: 'partial',
      detail: {
        method,
        reason: `not among the newest ${scanned} ${noun}s, and the listing does not reach back to the attempt`,
        scanned,
      },
    };
  }

  return {
    ...contract,
    unsendable(operation, pkg) {
      const op = Object.hasOwn(spec.operations, operation) ? spec.operations[operation] : undefined;
      if (!op) return `${spec.name} declares no request for ${operation} on this worker`;
      if (filled(op.path, (field) => valueAt(pkg.body, field)) === null)
        return `${spec.name} ${operation}: the path ${op.path} cannot be filled from the released body`;
      return undefined;
    },
    async send({ idempotencyKey, operation, package: pkg, timeoutMs, signal }): Promise<SendOutcome> {
      const op = Object.hasOwn(spec.operations, operation) ? spec.operations[operation] : undefined;
      const path = op && filled(op.path, (field) => valueAt(pkg.body, field));
      // Both are fixed at approval; a deploy that dropped the operation sends nothing (and says so).
      if (!op || path === null || path === undefined)
        return {
          class: 'not_sent',
          detail: { reason: `${spec.name} has no request for ${operation} on this worker: nothing was sent` },
        };
      const headers = { ...auth, ...(spec.idempotencyKey ? { [spec.idempotencyKey.header]: idempotencyKey } : {}) };
      const answer = await sendJson(op.method ?? 'POST', `${baseUrl}${path}`, pkg.body, headers, timeoutMs, signal);
      if (isOutcome(answer)) return answer;
      const { status, headers: answered, body } = answer;
      if (status >= 200 && status < 300) {
        const id = textAt(body, idField);
        if (!id) return { class: 'unknown', httpStatus: status, detail: { reason: `2xx without ${aNoun} ID`, body } };
        const replay = spec.idempotencyKey?.replayedHeader;
        const replayed = replay ? answered.get(replay) === 'true' : false;
        return {
          class: 'confirmed',
          httpStatus: status,
          externalId: id,
          externalUrl: objectUrl(id),
          occurredAt: createdAt(body) || new Date().toISOString(),
          detail: { reason: replayed ? 'created (stored response replayed for our key)' : 'created', body, replayed },
        };
      }
      const override = Object.hasOwn(spec.statuses ?? {}, status) ? spec.statuses?.[status] : undefined;
      if (override) {
        const detail = { reason: `HTTP ${status}: ${override.reason}`, body };
        if (override.class === 'not_sent')
          return {
            class: 'not_sent',
            httpStatus: status,
            retryAfterMs: retryAfterMs(answered.get('retry-after')),
            detail,
          };
        return { class: override.class, httpStatus: status, detail };
      }
      return classifyErrorStatus(status, body, answered.get('retry-after'), {
        keyed: spec.idempotencyKey !== undefined,
      });
    },

    async readBack(request): Promise<ReadbackResult> {
      for (const read of spec.readback) {
        const verdict =
          read.by === 'key'
            ? await byKey(read, request)
            : read.by === 'reference'
              ? await byReference(read, request)
              : await byListing(read, request);
        if (verdict) return verdict;
      }
      return {
        outcome: 'inconclusive',
        coverage: 'partial',
        detail: { method: spec.readback.map((r) => r.by).join('+'), reason: 'no way of reading back could conclude' },
      };
    },

    async lookup(externalId, request): Promise<LookupResult> {
      const answer = await getJson<unknown>(objectUrl(externalId), request, auth);
      if (answer.status === 404) return { exists: false };
      // The object at the URL of the ID a person named is that object, whether or not it repeats its ID.
      const id = textAt(answer.body, idField) ?? externalId;
      // A person names the object: a time it shows that cannot be read does not stop them, the fact's time is then
      // when it was checked (a readback says why it could not conclude).
      let occurredAt = '';
      try {
        occurredAt = createdAt(answer.body);
      } catch (error) {
        if (!(error instanceof DestinationResponseError)) throw error;
      }
      return {
        exists: true,
        externalId: id,
        externalUrl: objectUrl(id),
        occurredAt: occurredAt || new Date().toISOString(),
        matchesRelease: isExact(answer.body, request),
      };
    },

    resolveUrl: (url) => objectIdFromUrl(url, baseUrl, objectPrefix),
    objectUrlShape: `${baseUrl}${objectPrefix}<id>`,
  };
}

/**
 * The declared destination: its contract for backend code, and `connect` for workers (hosted where the base URL
 * resolves in the worker's environment).
 */
export function httpDestination(spec: HttpDestinationSpec): Destination {
  const contract = httpContract(spec);
  return defineDestination({
    contract,
    connect(context) {
      const baseUrl = typeof spec.baseUrl === 'function' ? spec.baseUrl(context) : spec.baseUrl;
      if (!baseUrl) return undefined;
      return httpAdapter(spec, { baseUrl, ...(context.credential ? { credential: context.credential } : {}) });
    },
  });
}
