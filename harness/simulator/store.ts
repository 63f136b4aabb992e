// In-memory state of the provider simulator: ordered collections of created
// resources and Stripe-style idempotency key records. Nothing survives a restart,
// which is fine: the simulator stands in for a remote system inside one test run.
import { createHash, randomInt } from 'node:crypto';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** A response exactly as first sent, so a replay can repeat it byte for byte. */
export interface StoredResponse {
  status: number;
  body: JsonObject;
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export function randomId(prefix: string, length = 14): string {
  let id = prefix;
  for (let i = 0; i < length; i++) id += ALNUM[randomInt(ALNUM.length)];
  return id;
}

/** JSON with object keys sorted recursively, so the hash ignores key order. */
export function canonicalJson(value: Json): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: Json): Json {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  const sorted: JsonObject = {};
  for (const key of Object.keys(value).sort()) sorted[key] = sortKeys(value[key] as Json);
  return sorted;
}

export function bodySha256(body: Json): string {
  return createHash('sha256').update(canonicalJson(body)).digest('hex');
}

/**
 * Insertion-ordered resources. Listing walks backwards by insertion position, so
 * "newest first" is stable even when several items share a timestamp, and a
 * position doubles as a pagination cursor.
 */
export class Collection<T extends { id: string }> {
  readonly #items: T[] = [];
  readonly #positions = new Map<string, number>();

  add(item: T): T {
    this.#positions.set(item.id, this.#items.length);
    this.#items.push(item);
    return item;
  }

  get(id: string): T | undefined {
    const position = this.#positions.get(id);
    return position === undefined ? undefined : this.#items[position];
  }

  position(id: string): number | undefined {
    return this.#positions.get(id);
  }

  get size(): number {
    return this.#items.length;
  }

  /**
   * Newest first, only items strictly older than position `before`, only among
   * the newest `window` items (older ones are invisible), keeping those that
   * satisfy `match`. `hasMore` says whether another matching item exists.
   */
  newestFirst(opts: {
    limit: number;
    before?: number | undefined;
    window?: number | undefined;
    match?: ((item: T) => boolean) | undefined;
  }): {
    page: T[];
    hasMore: boolean;
  } {
    const floor = opts.window === undefined ? 0 : Math.max(0, this.#items.length - opts.window);
    const page: T[] = [];
    for (let i = Math.min(opts.before ?? this.#items.length, this.#items.length) - 1; i >= floor; i--) {
      const item = this.#items[i] as T;
      if (opts.match && !opts.match(item)) continue;
      if (page.length === opts.limit) return { page, hasMore: true };
      page.push(item);
    }
    return { page, hasMore: false };
  }

  clear(): void {
    this.#items.length = 0;
    this.#positions.clear();
  }
}

export interface KeyRecord {
  key: string;
  bodySha256: string;
  createdAtMs: number;
  status: 'in_flight' | 'completed';
  objectId: string | null;
  response: StoredResponse | null;
}

export type KeyClaim =
  | { kind: 'reserved'; record: KeyRecord }
  | { kind: 'replay'; record: KeyRecord; response: StoredResponse }
  | { kind: 'mismatch' }
  | { kind: 'in_use' };

/**
 * Idempotency records. Expiry is computed from the *current* retention at read
 * time, so shortening retention through the control API also ages out keys that
 * already exist — that is how tests make a provider "forget" a key on demand.
 * In-flight records never expire: the request holding them is still running.
 */
export class IdempotencyStore {
  retentionMs: number;
  readonly #records = new Map<string, KeyRecord>();
  readonly #now: () => number;

  constructor(retentionMs: number, now: () => number = Date.now) {
    this.retentionMs = retentionMs;
    this.#now = now;
  }

  expiresAtMs(record: KeyRecord): number {
    return record.createdAtMs + this.retentionMs;
  }

  #expired(record: KeyRecord): boolean {
    return record.status === 'completed' && this.#now() >= this.expiresAtMs(record);
  }

  get(key: string): KeyRecord | undefined {
    const record = this.#records.get(key);
    if (record && this.#expired(record)) {
      this.#records.delete(key);
      return undefined;
    }
    return record;
  }

  /** Decide what a request carrying `key` may do, reserving the key if it is new. */
  claim(key: string, sha256: string): KeyClaim {
    const existing = this.get(key);
    if (!existing) {
      const record: KeyRecord = {
        key,
        bodySha256: sha256,
        createdAtMs: this.#now(),
        status: 'in_flight',
        objectId: null,
        response: null,
      };
      this.#records.set(key, record);
      return { kind: 'reserved', record };
    }
    if (existing.bodySha256 !== sha256) return { kind: 'mismatch' };
    if (existing.status === 'in_flight' || !existing.response) return { kind: 'in_use' };
    return { kind: 'replay', record: existing, response: existing.response };
  }

  complete(record: KeyRecord, objectId: string, response: StoredResponse): void {
    record.status = 'completed';
    record.objectId = objectId;
    record.response = response;
  }

  /** Forget a reservation whose request never committed (identity check: a reset may have replaced it). */
  release(record: KeyRecord): void {
    if (this.#records.get(record.key) === record && record.status === 'in_flight') this.#records.delete(record.key);
  }

  get size(): number {
    for (const key of [...this.#records.keys()]) this.get(key);
    return this.#records.size;
  }

  clear(): void {
    this.#records.clear();
  }
}
