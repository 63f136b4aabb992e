// The kit's own HTTP proxy between an adapter and its real API, for the faults of a provider's shape that
// Toxiproxy cannot make, because they live in the answers: it reads each exchange as HTTP and JSON and changes
// what the declaration says the API is (provider-shape.ts). Every request is forwarded to the real API as it came
// (the API makes what it makes); what the adapter hears back is what the fault changes:
//   clock-behind / clock-ahead  the API's clock 10 s off the ledger's: every creation time it writes, and the Date
//                               header of every answer; the first request's answer is lost (readback decides)
//   pinned-old-item             the listing's first page begins with an old object (a copy of the oldest listed,
//                               dated a day back), as a pinned post does; the first answer is lost
//   search-lag                  reference searches do not show an object until it is L old; the first answer lost
//   key-forgotten               the API's reads are down (503) until it has forgotten our key, after the declared
//                               retention (a read outage longer than the retention); then a lookup of the key
//                               answers 404 and a request with it reaches the API as new; the first answer lost
//   503-after-commit            the first request is forwarded, made, and answered 503 with Retry-After: 1
//   epoch-timestamps            every creation time the API writes, as unix seconds
// A busy listing: where our object would be on a listing's first page, the proxy shows others' objects made after
// it (copies of ours under references of their own, only in this proxy's answers), as many as push ours to the
// top of the second page, in pages as long as the API's own: whatever a scan concludes from page one under the
// clock and pinned faults, it concludes without having seen ours.
import { Agent, createServer, request as httpRequest, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { valueAt } from '../activities/destinations/http-spec.js';
import type { ProviderFault } from './faults.js';
import { type ListingShape, type ProviderShape, setAt, timeOf, writtenLike } from './provider-shape.js';

export interface FaultProxyOptions {
  /** host:port of the real API. */
  upstream: string;
  shape: ProviderShape;
  fault: ProviderFault;
  /** The step's reference: the fault meets the first request that carries it. */
  reference: string;
  /** How far behind writes a reference search runs when its declaration names no lag. */
  searchLagMs: number;
}

export interface FaultProxy {
  /** host:port the adapter connects to. */
  address: string;
  /** Resolves, with the time, once no request is being forwarded or answered. */
  settled(): Promise<number>;
  stop(): Promise<void>;
}

/** The clock faults' offset: a provider clock 10 s off the ledger's, twice the 5 s a listing once assumed. */
export const CLOCK_SKEW_MS = 10_000;
const DAY_MS = 24 * 60 * 60 * 1000;
const KIT_CURSOR = 'kit-page-';
/** Pages of a listing read to re-page it; a longer listing is passed on as it is. */
const MAX_LISTING_PAGES = 20;

const LOSES_FIRST_ANSWER: ReadonlySet<ProviderFault> = new Set([
  'clock-behind',
  'clock-ahead',
  'pinned-old-item',
  'search-lag',
  'key-forgotten',
]);

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'host']);

function parsed(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}

export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const { shape, fault, reference } = options;
  const [host, port] = [
    options.upstream.slice(0, options.upstream.lastIndexOf(':')),
    options.upstream.split(':').pop(),
  ];
  const agent = new Agent({ keepAlive: true });
  const time = shape.createdAt;
  const keyHeader = shape.key?.header.toLowerCase();
  const keyLookups = shape.keyLookups.map((source) => new RegExp(source));
  const retentionMs = (shape.key?.retentionSeconds ?? 0) * 1000;
  /** Keys as the API knows them: our key → the key it last registered, and when. */
  const registered = new Map<string, { upstreamKey: string; at: number }>();
  /** When the proxy saw each object made (by ID): the lag of an object whose time it cannot read. */
  const seen = new Map<string, number>();
  let metFirst = false;
  let busy = 0;
  let forgotten = 0;

  const isOurs = (item: unknown) => valueAt(item, shape.referenceField) === reference;

  function forward(method: string, path: string, headers: IncomingHttpHeaders, body?: Buffer): Promise<Answer> {
    return new Promise((resolve, reject) => {
      // The body may be another than the one the headers were sent with (another writer's): its own length.
      const own = Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name)));
      const outgoing = httpRequest(
        {
          host,
          port,
          method,
          path,
          agent,
          headers: { ...own, host: options.upstream, ...(body ? { 'content-length': body.length } : {}) },
        },
        (response) => {
          readAll(response).then(
            (answered) => resolve({ status: response.statusCode ?? 502, headers: response.headers, body: answered }),
            reject,
          );
        },
      );
      outgoing.on('error', reject);
      outgoing.end(body);
    });
  }

  function reply(res: ServerResponse, answer: Answer, json?: unknown) {
    const body = json === undefined ? answer.body : Buffer.from(JSON.stringify(json));
    const headers = Object.fromEntries(Object.entries(answer.headers).filter(([name]) => !HOP_BY_HOP.has(name)));
    // The API's clock shows in its Date header too.
    const shift = fault === 'clock-behind' ? -CLOCK_SKEW_MS : fault === 'clock-ahead' ? CLOCK_SKEW_MS : 0;
    const date = Date.parse(String(answer.headers.date));
    if (shift && Number.isFinite(date)) headers.date = new Date(date + shift).toUTCString();
    res.writeHead(answer.status, { ...headers, 'content-length': body.length }).end(body);
  }

  /** One object's creation time as the fault has the API write it. */
  function retime(object: unknown) {
    const written = valueAt(object, time.field);
    const ms = timeOf(written, time.format);
    if (!Number.isFinite(ms)) return;
    if (fault === 'epoch-timestamps') setAt(object, time.field, Math.floor(ms / 1000));
    else if (fault === 'clock-behind') setAt(object, time.field, writtenLike(written, ms - CLOCK_SKEW_MS, time.format));
    else if (fault === 'clock-ahead') setAt(object, time.field, writtenLike(written, ms + CLOCK_SKEW_MS, time.format));
  }

  /** Every object of an answer: itself, and each item of its declared lists. */
  function retimeAll(json: unknown) {
    retime(json);
    for (const { items } of [...shape.listings, ...shape.searches]) {
      const listed = valueAt(json, items);
      if (Array.isArray(listed)) for (const item of listed) retime(item);
    }
  }
  const retimes = fault === 'epoch-timestamps' || fault === 'clock-behind' || fault === 'clock-ahead';

  /** A key as the API knows it now: past the retention since it registered it, a new one. */
  function keyFor(key: string): string {
    const known = registered.get(key);
    if (known && Date.now() - known.at <= retentionMs) return known.upstreamKey;
    const upstreamKey = known ? `${key}.forgotten-${++forgotten}` : key;
    registered.set(key, { upstreamKey, at: Date.now() });
    return upstreamKey;
  }

  /** A lookup of a key the API forgot asks for one it never knew: 404. */
  function lookedUp(path: string): string {
    const [pathname = '', query] = path.split('?');
    for (const pattern of keyLookups) {
      const match = pattern.exec(pathname);
      if (!match?.[1]) continue;
      const key = decodeURIComponent(match[1]);
      const known = registered.get(key);
      const now = known && Date.now() - known.at <= retentionMs ? known.upstreamKey : `${key}.forgotten`;
      // The key is the path's last segment (provider-shape.ts anchors it there).
      return `${pathname.slice(0, pathname.length - match[1].length)}${encodeURIComponent(now)}${query === undefined ? '' : `?${query}`}`;
    }
    return path;
  }

  /** The listing as a busy API shows it: others' objects above ours, to the top of page two; a pinned old item. */
  async function repaged(listing: ListingShape, url: URL, headers: IncomingHttpHeaders): Promise<[Answer, unknown]> {
    const cursor = url.searchParams.get(listing.cursorParam);
    const path = `${url.pathname}${url.search}`;
    if (cursor !== null && !cursor.startsWith(KIT_CURSOR)) {
      const answer = await forward('GET', path, headers);
      const json = parsed(answer.body);
      if (json !== undefined && retimes) retimeAll(json);
      return [answer, json];
    }
    const index = cursor === null ? 0 : Number(cursor.slice(KIT_CURSOR.length));
    const base = new URL(url);
    base.searchParams.delete(listing.cursorParam);
    const items: unknown[] = [];
    let first: { answer: Answer; json: unknown; length: number } | undefined;
    let next: string | undefined;
    for (let pages = 0; pages < MAX_LISTING_PAGES; pages++) {
      const page = new URL(base);
      if (next !== undefined) page.searchParams.set(listing.cursorParam, next);
      const answer = await forward('GET', `${page.pathname}${page.search}`, headers);
      const json = parsed(answer.body);
      const listed = valueAt(json, listing.items);
      if (answer.status !== 200 || !Array.isArray(listed)) return [answer, undefined];
      first ??= { answer, json, length: listed.length };
      items.push(...listed);
      const cursorValue = valueAt(json, listing.nextCursor);
      next = typeof cursorValue === 'string' || typeof cursorValue === 'number' ? String(cursorValue) : undefined;
      if (next === undefined || next === '') break;
    }
    if (!first) throw new Error('no listing page');
    if (next) {
      // Longer than the proxy re-pages: the first page as the API gave it.
      if (retimes) retimeAll(first.json);
      return [first.answer, first.json];
    }
    const pinned = fault === 'pinned-old-item' ? pinnedCopy(items) : undefined;
    const ours = items.findIndex(isOurs);
    const size = Math.max(1, first.length);
    const others = ours < 0 ? [] : othersAfter(items[ours], Math.max(0, size - ours - (pinned === undefined ? 0 : 1)));
    const listed = [...(pinned === undefined ? [] : [pinned]), ...others, ...items];
    if (retimes) for (const item of listed) if (item !== pinned) retime(item);
    const body = structuredClone(first.json);
    setAt(body, listing.items, listed.slice(index * size, (index + 1) * size));
    setAt(body, listing.nextCursor, (index + 1) * size < listed.length ? `${KIT_CURSOR}${index + 1}` : null);
    return [first.answer, body];
  }

  /** The oldest listed object not ours, dated a day back: an old post pinned above the newest. */
  function pinnedCopy(items: unknown[]): unknown {
    const oldest = [...items].reverse().find((item) => !isOurs(item));
    if (oldest === undefined) return undefined;
    const pinned = structuredClone(oldest);
    setAt(pinned, time.field, writtenLike(valueAt(pinned, time.field), Date.now() - DAY_MS, time.format));
    return pinned;
  }

  /** `count` objects of other writers, made after `ours` (now): copies of it under IDs and references of their own. */
  function othersAfter(ours: unknown, count: number): unknown[] {
    // Dated just after ours, not when the listing is read: a look taken late (a loaded machine, a retry's fresh
    // look after the in-flight window) must meet the same page as one taken at once.
    const oursAt = timeOf(valueAt(ours, time.field), time.format);
    const at = Number.isFinite(oursAt) ? oursAt : Date.now();
    return Array.from({ length: count }, (_, n) => {
      const other = structuredClone(ours);
      setAt(other, shape.idField, `${String(valueAt(ours, shape.idField))}-other-${n + 1}`);
      setAt(other, shape.referenceField, `${reference}.other-${n + 1}`);
      setAt(other, time.field, writtenLike(valueAt(ours, time.field), at + count - n, time.format));
      return other;
    });
  }

  async function get(url: URL, headers: IncomingHttpHeaders, res: ServerResponse) {
    const ours = registered.get(reference);
    if (fault === 'key-forgotten' && ours && Date.now() - ours.at <= retentionMs) {
      const down = Buffer.from(JSON.stringify({ error: { message: 'reads are down' } }));
      res.writeHead(503, { 'content-type': 'application/json', 'content-length': down.length });
      return res.end(down);
    }
    const path = fault === 'key-forgotten' ? lookedUp(`${url.pathname}${url.search}`) : `${url.pathname}${url.search}`;
    const search = shape.searches.find((s) => s.pathname === url.pathname && url.searchParams.has(s.referenceParam));
    const listing = search ? undefined : shape.listings.find((l) => l.pathname === url.pathname);
    if (listing && (fault === 'pinned-old-item' || fault === 'clock-behind' || fault === 'clock-ahead')) {
      const [answer, json] = await repaged(listing, url, headers);
      return reply(res, answer, json);
    }
    const answer = await forward('GET', path, headers);
    const json = parsed(answer.body);
    if (json === undefined) return reply(res, answer);
    if (search && fault === 'search-lag') {
      const lag = search.lagMs || options.searchLagMs;
      const listed = valueAt(json, search.items);
      const madeAt = (item: unknown) => {
        const ms = timeOf(valueAt(item, time.field), time.format);
        return Number.isFinite(ms) ? ms : (seen.get(String(valueAt(item, shape.idField))) ?? 0);
      };
      if (Array.isArray(listed))
        setAt(
          json,
          search.items,
          listed.filter((item) => Date.now() - madeAt(item) >= lag),
        );
    }
    if (retimes) retimeAll(json);
    return reply(res, answer, json);
  }

  const server = createServer((req, res) => {
    busy += 1;
    const handled = (async () => {
      const body = await readAll(req);
      const url = new URL(req.url ?? '/', 'http://kit.invalid');
      const headers: IncomingHttpHeaders = { ...req.headers };
      const method = req.method ?? 'GET';
      if (method === 'GET' || method === 'HEAD') return get(url, headers, res);
      const json = parsed(body);
      const key = keyHeader ? headers[keyHeader] : undefined;
      if (fault === 'key-forgotten' && keyHeader && typeof key === 'string') headers[keyHeader] = keyFor(key);
      const first = !metFirst && valueAt(json, shape.referenceField) === reference;
      if (first) metFirst = true;
      const path = `${url.pathname}${url.search}`;
      const answer = await forward(method, path, headers, body);
      const made = parsed(answer.body);
      const id = valueAt(made, shape.idField);
      if (typeof id === 'string' || typeof id === 'number') seen.set(String(id), Date.now());
      if (first && fault === '503-after-commit') {
        const refusal = Buffer.from(JSON.stringify({ error: { message: 'Service Unavailable' } }));
        res.writeHead(503, {
          'content-type': 'application/json',
          'retry-after': '1',
          'content-length': refusal.length,
        });
        return res.end(refusal);
      }
      if (first && LOSES_FIRST_ANSWER.has(fault)) return res.socket?.destroy();
      if (made !== undefined && retimes) retimeAll(made);
      return reply(res, answer, made);
    })();
    handled
      .catch(() => res.socket?.destroy())
      .finally(() => {
        busy -= 1;
      });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: listening } = server.address() as AddressInfo;
  return {
    address: `127.0.0.1:${listening}`,
    async settled() {
      while (busy > 0) await new Promise((resolve) => setTimeout(resolve, 50));
      return Date.now();
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        agent.destroy();
        server.close(() => resolve());
      }),
  };
}
