// HTTP front of the provider simulator: a Stripe-style keyed API (/v1), a
// key-less social-style API (/social/v1) and a control API (/_control) that
// injects faults. Plain node:http so tests exercise real sockets, including
// connections that die without a response.

import type { IncomingMessage, ServerResponse } from 'node:http';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { z } from 'zod';
import type { Fault } from './faults.js';
import { DelayCancelledError, Delays, FaultQueue, faultRequestSchema } from './faults.js';
import { type LoggedRequest, RequestLog, settle } from './request-log.js';
import type { Json, JsonObject, KeyRecord } from './store.js';
import { bodySha256, Collection, IdempotencyStore, randomId } from './store.js';
import { rateLimitSchema, Traffic } from './traffic.js';

export interface ProviderSimulatorOptions {
  /** How long a completed idempotency key is remembered (default 24 h, like Stripe). */
  keyRetentionMs?: number;
  /** Only this many newest social posts are visible through listing (default 100). */
  keylessListLimit?: number;
}

export interface ProviderSimulator {
  server: http.Server;
  /** Resolves to the base URL, e.g. http://127.0.0.1:54321 */
  listen(port?: number, host?: string): Promise<string>;
  close(): Promise<void>;
}

export const DEFAULT_KEY_RETENTION_MS = 86_400_000;
export const DEFAULT_KEYLESS_LIST_LIMIT = 100;

const OBJECTS_PATH = '/v1/objects';
const POSTS_PATH = '/social/v1/posts';
const MAX_BODY_BYTES = 1_000_000;
const MAX_KEY_LENGTH = 255;

type ProviderObject = JsonObject & { id: string };
type SocialPost = JsonObject & { id: string };

interface Reply {
  status: number;
  body: object;
  headers?: Record<string, string>;
}

class HttpError extends Error {
  readonly reply: Reply;
  constructor(status: number, error: JsonObject, headers?: Record<string, string>) {
    super(typeof error.message === 'string' ? error.message : `HTTP ${status}`);
    this.reply = headers ? { status, body: { error }, headers } : { status, body: { error } };
  }
}

const invalidRequest = (message: string, extra: JsonObject = {}, status = 400) =>
  new HttpError(status, { type: 'invalid_request_error', message, ...extra });

const retentionSchema = z.object({ keyRetentionMs: z.number().int().min(0) }).strict();
const crowdSchema = z.object({ count: z.number().int().min(1).max(10_000) }).strict();
const searchLagSchema = z.object({ lagMs: z.number().int().min(0) }).strict();
const requestFilterSchema = z
  .object({
    method: z.string().min(1).optional(),
    path: z.string().startsWith('/').optional(),
    since: z.coerce.number().int().min(0).optional(),
  })
  .strict();

/** Each request's (and its response's) entry in the request log; control requests have none. */
const logged = new WeakMap<IncomingMessage | ServerResponse, LoggedRequest>();
/** A body is read once; later readers (a fault that reads it first, then the handler) share it. */
const bodies = new WeakMap<IncomingMessage, Promise<unknown>>();

interface Ctx {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  /** First path parameter, URL-decoded ('' when the route has none). */
  param: string;
}

interface Route {
  method: string;
  pattern: RegExp;
  handler: (ctx: Ctx) => void | Promise<void>;
}

/** The provider's state and its API handlers; the HTTP server below routes requests to them. */
class ProviderWorld {
  readonly initialRetentionMs: number;
  readonly keylessListLimit: number;
  readonly objects = new Collection<ProviderObject>();
  readonly posts = new Collection<SocialPost>();
  readonly keys: IdempotencyStore;
  readonly faults = new FaultQueue();
  readonly delays = new Delays();
  readonly postCounts = { [OBJECTS_PATH]: 0, [POSTS_PATH]: 0 };
  readonly requests = new RequestLog();
  readonly traffic = new Traffic();
  /** How far the Stripe-shaped search runs behind writes: an object shows in it only once this old. */
  searchLagMs = 0;

  constructor(opts: ProviderSimulatorOptions) {
    this.initialRetentionMs = opts.keyRetentionMs ?? DEFAULT_KEY_RETENTION_MS;
    this.keylessListLimit = opts.keylessListLimit ?? DEFAULT_KEYLESS_LIST_LIMIT;
    this.keys = new IdempotencyStore(this.initialRetentionMs);
  }

  /**
   * Shared skeleton of the two effectful POSTs: count it, take its fault, let
   * `produce` do the work (it handles delay_before_commit itself, because only
   * it knows when the key is in flight), then let the fault shape the response.
   * After-commit faults act on whatever `produce` answered, errors included.
   */
  private async effectfulPost(
    path: typeof OBJECTS_PATH | typeof POSTS_PATH,
    { req, res }: Ctx,
    produce: (req: IncomingMessage, beforeCommit: () => Promise<void>) => Promise<Reply>,
  ): Promise<void> {
    this.postCounts[path]++;
    const fault = this.faults.take(path, false, this.faults.hasReferenced() ? await referencesOf(req) : []);
    const entry = logged.get(req);
    if (entry) entry.fault = fault?.kind ?? null;
    // Faults that answer before the handler runs still read the body, so the log has its hash.
    if (
      fault?.kind === 'fail_before_commit' ||
      fault?.kind === 'status_503_before_commit' ||
      fault?.kind === 'status_429_before_commit' ||
      fault?.kind === 'status_422_before_commit'
    )
      await readJson(req).catch(() => undefined);
    if (fault?.kind === 'fail_before_commit') return destroy(res);
    if (fault?.kind === 'status_503_before_commit') {
      return send(res, {
        status: 503,
        body: { error: { type: 'api_error', message: 'Service unavailable (injected fault).' } },
        headers: { 'retry-after': '1' },
      });
    }
    if (fault?.kind === 'status_429_before_commit') {
      return send(res, {
        status: 429,
        body: { error: { type: 'rate_limit_error', message: 'Too many requests (injected fault).' } },
        headers: { 'retry-after': '1' },
      });
    }
    if (fault?.kind === 'status_422_before_commit') {
      return send(res, {
        status: 422,
        body: { error: { type: 'validation_error', message: 'Refused (injected fault).' } },
      });
    }
    const beforeCommit = async () => {
      if (fault?.kind === 'delay_before_commit') await this.delays.wait(fault.delayMs);
    };
    const reply = await produce(req, beforeCommit).catch(asReply);
    await this.afterCommit(fault, res, reply);
  }

  private async afterCommit(fault: Fault | undefined, res: ServerResponse, reply: Reply): Promise<void> {
    noteReply(res, reply);
    if (fault?.crowd && reply.status < 300) this.addOthersPosts(fault.crowd);
    switch (fault?.kind) {
      case 'drop_after_commit':
        return destroy(res);
      case 'status_500_after_commit':
        return send(res, {
          status: 500,
          body: { error: { type: 'api_error', message: 'Internal error (injected fault).' } },
        });
      case 'delay_after_commit':
        await this.delays.wait(fault.delayMs);
        return send(res, reply); // no-op if the client already gave up
      default:
        return send(res, reply);
    }
  }

  // ---- keyed, Stripe-style API --------------------------------------------

  private async createObject(req: IncomingMessage, beforeCommit: () => Promise<void>): Promise<Reply> {
    const body = await readJsonObject(req);
    const key = idempotencyKey(req);
    // Validation runs before the key is claimed: like Stripe, rejected requests are not stored under the key.
    validateAmount(body);
    const sha256 = bodySha256(body);
    const claim = key === null ? null : this.keys.claim(key, sha256);
    const reserved = claim?.kind === 'reserved' ? claim.record : null;
    try {
      await beforeCommit();
      if (claim?.kind === 'replay') return { ...claim.response, headers: { 'idempotent-replayed': 'true' } };
      if (claim?.kind === 'mismatch') {
        throw new HttpError(400, {
          type: 'idempotency_error',
          message: 'Keys for idempotent requests can only be used with the same parameters they were first used with.',
        });
      }
      if (claim?.kind === 'in_use') {
        throw new HttpError(409, {
          type: 'idempotency_error',
          code: 'idempotency_key_in_use',
          message: 'There is currently another in-progress request using this Idempotency-Key. Please try again later.',
        });
      }
      return this.commitObject(body, key, sha256, reserved);
    } finally {
      if (reserved) this.keys.release(reserved); // no-op once completed
    }
  }

  private commitObject(body: JsonObject, key: string | null, sha256: string, reserved: KeyRecord | null): Reply {
    const now = new Date();
    const object = this.objects.add({
      id: randomId('obj_'),
      object: 'object',
      // Its creation time three ways, as APIs write it: unix seconds (Stripe's `created`), ISO text, unix ms.
      created: Math.floor(now.getTime() / 1000),
      created_at: now.toISOString(),
      created_ms: now.getTime(),
      idempotency_key: key,
      metadata: body.metadata ?? {},
      body_sha256: sha256,
      request: body,
    });
    const reply = { status: 200, body: object };
    if (reserved) this.keys.complete(reserved, object.id, reply);
    return reply;
  }

  private listObjects({ res, url }: Ctx): void {
    const limit = intParam(url, 'limit', 10, 100);
    const startingAfter = url.searchParams.get('starting_after');
    const before = startingAfter === null ? undefined : this.objects.position(startingAfter);
    if (startingAfter !== null && before === undefined) {
      throw invalidRequest(`No such object: '${startingAfter}'`, { code: 'resource_missing', param: 'starting_after' });
    }
    const filters = metadataFilters(url);
    const { page, hasMore } = this.objects.newestFirst({
      limit,
      before,
      match: filters.length === 0 ? undefined : (o) => matchesMetadata(o.metadata, filters),
    });
    send(res, { status: 200, body: { object: 'list', data: page, has_more: hasMore } });
  }

  /**
   * Stripe's Search API shape: `query=metadata['key']:'value'`, pages of `limit` with an opaque `next_page` token
   * (taken back as `page`), and a search that lags behind writes (`searchLagMs`, set by the control API).
   */
  private searchObjects({ res, url }: Ctx): void {
    const limit = intParam(url, 'limit', 10, 100);
    const query = url.searchParams.get('query') ?? '';
    const clause = /^metadata\['([^']+)'\]:'([^']*)'$/.exec(query);
    if (!clause) throw invalidRequest(`Invalid search query: ${query}`, { param: 'query' });
    const [, key = '', value = ''] = clause;
    const page = url.searchParams.get('page');
    const visibleBefore = Date.now() - this.searchLagMs;
    const { page: data, hasMore } = this.objects.newestFirst({
      limit,
      before: page === null ? undefined : decodeCursor(page),
      match: (o) => matchesMetadata(o.metadata, [[key, value]]) && Number(o.created_ms) <= visibleBefore,
    });
    const last = data.at(-1);
    const next = hasMore && last ? encodeCursor(this.objects.position(last.id) ?? 0) : null;
    send(res, { status: 200, body: { object: 'search_result', data, has_more: hasMore, next_page: next } });
  }

  private getObject({ res, param }: Ctx): void {
    const object = this.objects.get(param);
    if (!object) throw invalidRequest(`No such object: '${param}'`, { code: 'resource_missing' }, 404);
    send(res, { status: 200, body: object });
  }

  private getIdempotencyKey({ res, param }: Ctx): void {
    const record = this.keys.get(param);
    if (!record) throw invalidRequest(`No such idempotency key: '${param}'`, { code: 'resource_missing' }, 404);
    send(res, {
      status: 200,
      body: {
        key: record.key,
        status: record.status,
        object_id: record.objectId,
        created_at: new Date(record.createdAtMs).toISOString(),
        expires_at: new Date(this.keys.expiresAtMs(record)).toISOString(),
      },
    });
  }

  // ---- key-less, social-style API -----------------------------------------

  private async createPost(req: IncomingMessage, beforeCommit: () => Promise<void>): Promise<Reply> {
    const body = await readJsonObject(req); // any Idempotency-Key header is deliberately ignored
    if (typeof body.text !== 'string') {
      throw new HttpError(422, { type: 'validation_error', message: '"text" is required and must be a string.' });
    }
    await beforeCommit();
    const post = this.posts.add({
      id: randomId('post_'),
      created_at: new Date().toISOString(),
      text: body.text,
      body_sha256: bodySha256(body),
      metadata: body.metadata ?? {},
      request: body,
    });
    return { status: 200, body: post };
  }

  private listPosts({ res, url }: Ctx): void {
    const pageSize = intParam(url, 'page_size', 20, 50);
    const cursor = url.searchParams.get('cursor');
    const { page, hasMore } = this.posts.newestFirst({
      limit: pageSize,
      before: cursor === null ? undefined : decodeCursor(cursor),
      window: this.keylessListLimit, // older posts are simply not listable
    });
    const last = page.at(-1);
    const next = hasMore && last ? encodeCursor(this.posts.position(last.id) ?? 0) : null;
    send(res, { status: 200, body: { data: page, next_cursor: next } });
  }

  private getPost({ res, param }: Ctx): void {
    const post = this.posts.get(param);
    if (!post) throw new HttpError(404, { type: 'not_found', message: `No such post: '${param}'` });
    send(res, { status: 200, body: post });
  }

  // ---- control API ----------------------------------------------------------

  private async addFaults({ req, res }: Ctx): Promise<void> {
    const request = parseControl(faultRequestSchema, await readJson(req));
    const queued = this.faults.add(request);
    send(res, { status: 200, body: { queued, pending: this.faults.list().length } });
  }

  private reset({ res }: Ctx): void {
    this.delays.cancelAll(); // this.requests parked in a fault delay belong to the old world: drop them
    this.objects.clear();
    this.posts.clear();
    this.keys.clear();
    this.keys.retentionMs = this.initialRetentionMs;
    this.searchLagMs = 0;
    this.faults.clear();
    this.requests.clear();
    this.postCounts[OBJECTS_PATH] = 0;
    this.postCounts[POSTS_PATH] = 0;
    this.traffic.clear();
    send(res, { status: 200, body: { reset: true } });
  }

  private async setRetention({ req, res }: Ctx): Promise<void> {
    this.keys.retentionMs = parseControl(retentionSchema, await readJson(req)).keyRetentionMs;
    send(res, { status: 200, body: { keyRetentionMs: this.keys.retentionMs } });
  }

  /** Others post on the feed, in one call: older posts drop out of the newest-100 listing at once. */
  private async crowdSocialFeed({ req, res }: Ctx): Promise<void> {
    const { count } = parseControl(crowdSchema, await readJson(req));
    this.addOthersPosts(count);
    send(res, { status: 200, body: { added: count, socialPosts: this.posts.size } });
  }

  private addOthersPosts(count: number): void {
    for (let i = 0; i < count; i++) {
      const body = { text: `someone else's post ${i}` };
      this.posts.add({
        id: randomId('post_'),
        created_at: new Date().toISOString(),
        text: body.text,
        body_sha256: bodySha256(body),
        metadata: {},
        request: body,
      });
    }
  }

  private async setRateLimit({ req, res }: Ctx): Promise<void> {
    this.traffic.set(parseControl(rateLimitSchema, await readJson(req)));
    send(res, { status: 200, body: this.traffic.report(Date.now()).limit });
  }

  private listRequests({ res, url }: Ctx): void {
    const filter = parseControl(requestFilterSchema, Object.fromEntries(url.searchParams));
    send(res, { status: 200, body: { requests: this.requests.list(filter) } });
  }

  private readonly routes: Route[] = [
    {
      method: 'POST',
      pattern: /^\/v1\/objects$/,
      handler: (ctx) => this.effectfulPost(OBJECTS_PATH, ctx, (req, before) => this.createObject(req, before)),
    },
    { method: 'GET', pattern: /^\/v1\/objects$/, handler: (ctx) => this.listObjects(ctx) },
    { method: 'GET', pattern: /^\/v1\/objects\/search$/, handler: (ctx) => this.searchObjects(ctx) },
    { method: 'GET', pattern: /^\/v1\/objects\/([^/]+)$/, handler: (ctx) => this.getObject(ctx) },
    { method: 'GET', pattern: /^\/v1\/idempotency_keys\/([^/]+)$/, handler: (ctx) => this.getIdempotencyKey(ctx) },
    {
      method: 'POST',
      pattern: /^\/social\/v1\/posts$/,
      handler: (ctx) => this.effectfulPost(POSTS_PATH, ctx, (req, before) => this.createPost(req, before)),
    },
    { method: 'GET', pattern: /^\/social\/v1\/posts$/, handler: (ctx) => this.listPosts(ctx) },
    { method: 'GET', pattern: /^\/social\/v1\/posts\/([^/]+)$/, handler: (ctx) => this.getPost(ctx) },
    { method: 'POST', pattern: /^\/_control\/faults$/, handler: (ctx) => this.addFaults(ctx) },
    {
      method: 'GET',
      pattern: /^\/_control\/faults$/,
      handler: ({ res }) => send(res, { status: 200, body: { faults: this.faults.list() } }),
    },
    {
      method: 'DELETE',
      pattern: /^\/_control\/faults$/,
      handler: ({ res }) => send(res, { status: 200, body: { cleared: this.faults.clear() } }),
    },
    {
      method: 'GET',
      pattern: /^\/_control\/stats$/,
      handler: ({ res }) =>
        send(res, {
          status: 200,
          body: {
            posts: { ...this.postCounts },
            objects: this.objects.size,
            socialPosts: this.posts.size,
            keys: this.keys.size,
          },
        }),
    },
    {
      // The provider's own dashboard: every post, including those too old to list (what a human checks).
      method: 'GET',
      pattern: /^\/_control\/social-posts$/,
      handler: ({ res }) =>
        send(res, { status: 200, body: { data: this.posts.newestFirst({ limit: Number.MAX_SAFE_INTEGER }).page } }),
    },
    { method: 'POST', pattern: /^\/_control\/social-posts$/, handler: (ctx) => this.crowdSocialFeed(ctx) },
    {
      // Answers held by delay faults go out now (a test releases what it held back when it is ready).
      method: 'POST',
      pattern: /^\/_control\/release-delays$/,
      handler: ({ res }) => send(res, { status: 200, body: { released: this.delays.releaseAll() } }),
    },
    {
      method: 'GET',
      pattern: /^\/_control\/delays$/,
      handler: ({ res }) => send(res, { status: 200, body: { held: this.delays.size } }),
    },
    // The provider's request log: every request to its API, with the fault applied and the answer.
    { method: 'GET', pattern: /^\/_control\/requests$/, handler: (ctx) => this.listRequests(ctx) },
    {
      method: 'DELETE',
      pattern: /^\/_control\/requests$/,
      handler: ({ res }) => send(res, { status: 200, body: { cleared: this.requests.clear() } }),
    },
    { method: 'POST', pattern: /^\/_control\/reset$/, handler: (ctx) => this.reset(ctx) },
    // Above R requests a second the API answers 429 with Retry-After ({"requestsPerSecond": null} lifts it).
    { method: 'POST', pattern: /^\/_control\/rate-limit$/, handler: (ctx) => this.setRateLimit(ctx) },
    {
      // Per second: reads (by path), writes and 429s of the rate limit; `?since=<epoch ms>`.
      method: 'GET',
      pattern: /^\/_control\/traffic$/,
      handler: ({ res, url }) =>
        send(res, { status: 200, body: this.traffic.report(Number(url.searchParams.get('since') ?? 0) || 0) }),
    },
    { method: 'POST', pattern: /^\/_control\/retention$/, handler: (ctx) => this.setRetention(ctx) },
    {
      // The Stripe-shaped search runs this far behind writes ({"lagMs": 0} catches it up).
      method: 'POST',
      pattern: /^\/_control\/search-lag$/,
      handler: async ({ req, res }) => {
        this.searchLagMs = parseControl(searchLagSchema, await readJson(req)).lagMs;
        send(res, { status: 200, body: { lagMs: this.searchLagMs } });
      },
    },
    {
      method: 'GET',
      pattern: /^\/_control\/retention$/,
      handler: ({ res }) => send(res, { status: 200, body: { keyRetentionMs: this.keys.retentionMs } }),
    },
  ];

  async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(`http://simulator${req.url ?? '/'}`);
    if (!url.pathname.startsWith('/_control/')) {
      const rawKey = req.headers['idempotency-key'];
      const key = rawKey === undefined ? null : Array.isArray(rawKey) ? rawKey.join(', ') : rawKey;
      const entry = this.requests.start(req.method ?? '', url.pathname, url.search.slice(1), key);
      logged.set(req, entry);
      logged.set(res, entry);
      // The rate limit comes before everything else, as at a provider's edge: nothing behind it runs.
      const retryAfter = this.traffic.admit(req.method ?? '', url.pathname);
      if (retryAfter !== null)
        throw new HttpError(
          429,
          { type: 'rate_limit_error', message: 'Too many requests: the rate limit was exceeded.' },
          { 'retry-after': String(retryAfter) },
        );
    }
    const candidates = this.routes.filter((r) => r.pattern.test(url.pathname));
    const found = candidates.find((r) => r.method === req.method);
    if (!found) {
      if (candidates.length === 0)
        throw invalidRequest(`Unrecognized request URL (${req.method}: ${url.pathname})`, {}, 404);
      throw new HttpError(
        405,
        { type: 'invalid_request_error', message: `Method ${req.method} not allowed on ${url.pathname}` },
        { allow: candidates.map((r) => r.method).join(', ') },
      );
    }
    if (req.method === 'GET' && !url.pathname.startsWith('/_control/') && this.faults.take(url.pathname, true)) {
      const entry = logged.get(req);
      if (entry) entry.fault = 'read_error_500';
      throw new HttpError(500, { type: 'api_error', message: 'Internal error while reading (injected fault).' });
    }
    const raw = found.pattern.exec(url.pathname)?.[1];
    await found.handler({ req, res, url, param: raw === undefined ? '' : decodeParam(raw) });
  }
}

export function createProviderSimulator(opts: ProviderSimulatorOptions = {}): ProviderSimulator {
  const world = new ProviderWorld(opts);
  const server = http.createServer((req, res) => {
    world.route(req, res).catch((err: unknown) => {
      if (err instanceof DelayCancelledError) {
        const entry = logged.get(res);
        if (entry) settle(entry, 'cancelled');
        return void res.destroy();
      }
      if (err instanceof HttpError) return send(res, err.reply);
      send(res, { status: 500, body: { error: { type: 'api_error', message: String(err) } } });
    });
  });

  // Tracked so close() can cut keep-alive and parked (delayed) connections instead of waiting on them.
  const sockets = new Set<Socket>();
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  return {
    server,
    listen(port = 0, host = '127.0.0.1') {
      return new Promise<string>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          const { address, family, port: bound } = server.address() as AddressInfo;
          resolve(`http://${family === 'IPv6' ? `[${address}]` : address}:${bound}`);
        });
      });
    },
    close() {
      world.delays.cancelAll();
      return new Promise<void>((resolve) => {
        server.close(() => resolve()); // also resolves (with an error we ignore) if never listening
        for (const socket of sockets) socket.destroy();
      });
    },
  };
}

// ---- helpers ------------------------------------------------------------------

function asReply(err: unknown): Reply {
  if (err instanceof HttpError) return err.reply;
  throw err;
}

function send(res: ServerResponse, reply: Reply): void {
  const entry = logged.get(res);
  noteReply(res, reply);
  if (res.destroyed || res.headersSent) {
    if (entry) settle(entry, 'client_gone', reply.status);
    return;
  }
  res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
  res.end(JSON.stringify(reply.body));
  if (entry) settle(entry, 'answered', reply.status);
}

/** What the handler answered, in the request's log entry (before a fault may replace or hold it). */
function noteReply(res: ServerResponse, reply: Reply): void {
  const entry = logged.get(res);
  if (entry?.fate !== 'pending') return;
  const body = reply.body as { id?: unknown; error?: { type?: unknown; code?: unknown } };
  if (typeof body.id === 'string') entry.objectId = body.id;
  entry.replayed = reply.headers?.['idempotent-replayed'] === 'true';
  if (typeof body.error?.type === 'string') entry.errorType = body.error.type;
  if (typeof body.error?.code === 'string') entry.errorCode = body.error.code;
}

/** Cuts the connection without a response (an injected fault). */
function destroy(res: ServerResponse): void {
  const entry = logged.get(res);
  if (entry) settle(entry, 'dropped');
  res.destroy();
}

function readJson(req: IncomingMessage): Promise<unknown> {
  let body = bodies.get(req);
  if (!body) {
    body = readJsonOnce(req);
    bodies.set(req, body);
  }
  return body;
}

async function readJsonOnce(req: IncomingMessage): Promise<unknown> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw invalidRequest(`Request body exceeds ${MAX_BODY_BYTES} bytes.`, {}, 413);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text) as unknown;
  } catch {
    throw invalidRequest('Request body is not valid JSON.');
  }
  const entry = logged.get(req);
  if (entry && isJsonObject(parsed)) {
    entry.bodySha256 = bodySha256(parsed);
    const metadata = parsed.metadata;
    if (isJsonObject(metadata) && typeof metadata.effect_id === 'string') entry.effectId = metadata.effect_id;
  }
  return parsed;
}

function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

async function readJsonObject(req: IncomingMessage): Promise<JsonObject> {
  const body = await readJson(req);
  if (!isJsonObject(body)) throw invalidRequest('Request body must be a JSON object.');
  return body;
}

/** What a request names itself by: its Idempotency-Key and the effect ID stamped in its body's metadata. */
async function referencesOf(req: IncomingMessage): Promise<string[]> {
  const body = await readJson(req).catch(() => undefined);
  const stamped = isJsonObject(body) && isJsonObject(body.metadata) ? body.metadata.effect_id : undefined;
  return [idempotencyKey(req), typeof stamped === 'string' ? stamped : null].filter((r): r is string => r !== null);
}

function idempotencyKey(req: IncomingMessage): string | null {
  const raw = req.headers['idempotency-key'];
  if (raw === undefined) return null;
  const key = Array.isArray(raw) ? raw.join(', ') : raw;
  if (key.length === 0 || key.length > MAX_KEY_LENGTH) {
    throw invalidRequest(`Idempotency-Key must be 1 to ${MAX_KEY_LENGTH} characters long.`);
  }
  return key;
}

/** The one validation rule, so callers can provoke a definitive (non-retryable) rejection. */
function validateAmount(body: JsonObject): void {
  if (!('amount' in body)) return;
  const amount = body.amount;
  if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount <= 0) {
    throw invalidRequest('Invalid amount: must be a positive integer.', { code: 'parameter_invalid', param: 'amount' });
  }
}

function intParam(url: URL, name: string, fallback: number, max: number): number {
  const raw = url.searchParams.get(name);
  if (raw === null) return fallback;
  const value = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!(value >= 1 && value <= max)) {
    throw invalidRequest(`Invalid ${name}: must be an integer between 1 and ${max}.`, { param: name });
  }
  return value;
}

/** `metadata[KEY]=VALUE` query params, Stripe's search-by-metadata shape. */
function metadataFilters(url: URL): Array<[string, string]> {
  const filters: Array<[string, string]> = [];
  for (const [name, value] of url.searchParams) {
    const key = /^metadata\[(.+)\]$/.exec(name)?.[1];
    if (key !== undefined) filters.push([key, value]);
  }
  return filters;
}

function matchesMetadata(metadata: Json | undefined, filters: Array<[string, string]>): boolean {
  if (!isJsonObject(metadata)) return false;
  return filters.every(([key, expected]) => {
    const actual = metadata[key];
    return (
      (typeof actual === 'string' || typeof actual === 'number' || typeof actual === 'boolean') &&
      String(actual) === expected
    );
  });
}

// Cursors are opaque to clients; inside they are the insertion position of the last post returned.
function encodeCursor(position: number): string {
  return Buffer.from(`p${position}`).toString('base64url');
}

function decodeCursor(cursor: string): number {
  const match = /^p(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match) throw invalidRequest('Invalid cursor.', { param: 'cursor' });
  return Number(match[1]);
}

function decodeParam(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw invalidRequest('Malformed percent-encoding in URL path.');
  }
}

function parseControl<T extends z.ZodType>(schema: T, input: unknown): z.infer<T> {
  const result = schema.safeParse(input);
  if (!result.success) throw invalidRequest(`Invalid control request: ${z.prettifyError(result.error)}`);
  return result.data;
}
