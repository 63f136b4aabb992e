// What the kit's fault proxy must know of an HTTP API to fault its shape, read from the API's declaration (the
// spec httpDestination takes): where an object carries its ID, its creation time (and in which format), and the
// step's reference; which GETs are listings and reference searches, with their list fields, cursors and declared
// lag; which GETs look a key up; the key header and how long the provider keeps a key. The kit faults what the
// declaration says the API is, so it needs no knowledge of the API beyond it. Plain data: it travels to the
// kit's proxy process as JSON.
import type { HttpDestinationSpec } from '../activities/destinations/http-destination.js';
import { isRecord, valueAt } from '../activities/destinations/http-spec.js';

/** How the declaration says the provider writes a time; `assumed` when it names none (read as it comes). */
export type TimeFormat = 'iso' | 'epoch-seconds' | 'epoch-ms' | 'assumed';

export interface ListingShape {
  pathname: string;
  items: string;
  nextCursor: string;
  cursorParam: string;
}

export interface SearchShape {
  pathname: string;
  /** The query parameter the reference travels in. */
  referenceParam: string;
  items: string;
  /** How long the declaration says the search may lag behind writes (0: none declared). */
  lagMs: number;
}

export interface ProviderShape {
  idField: string;
  referenceField: string;
  createdAt: { field: string; format: TimeFormat };
  listings: ListingShape[];
  searches: SearchShape[];
  /** Key lookups: a pattern (RegExp source) of the path, with the key in its one group. */
  keyLookups: string[];
  key?: { header: string; retentionSeconds: number };
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function split(template: string): { pathname: string; query: URLSearchParams } {
  const at = template.indexOf('?');
  return at < 0
    ? { pathname: template, query: new URLSearchParams() }
    : { pathname: template.slice(0, at), query: new URLSearchParams(template.slice(at + 1)) };
}

/** `created_at`, or the object form the declaration may take (`{ field, format }`). */
function createdAtOf(declared: unknown): ProviderShape['createdAt'] {
  if (typeof declared === 'string') return { field: declared, format: 'assumed' };
  if (typeof declared === 'object' && declared !== null) {
    const { path, field: named, format } = declared as { path?: unknown; field?: unknown; format?: unknown };
    const field = path ?? named;
    const known = ['iso', 'epoch-seconds', 'epoch-ms'] as const;
    return {
      field: typeof field === 'string' ? field : 'created_at',
      format: known.find((k) => k === format) ?? 'assumed',
    };
  }
  return { field: 'created_at', format: 'assumed' };
}

export function shapeOf(spec: HttpDestinationSpec): ProviderShape {
  const listings: ListingShape[] = [];
  const searches: SearchShape[] = [];
  const keyLookups: string[] = [];
  for (const read of spec.readback) {
    const { pathname, query } = split(read.path);
    if (read.by === 'listing')
      listings.push({ pathname, items: read.items, nextCursor: read.nextCursor, cursorParam: read.cursorParam });
    else if (read.by === 'reference') {
      const referenceParam = [...query.entries()].find(([, value]) => value.includes('{reference}'))?.[0];
      const lagMs = (read as { lagMs?: unknown }).lagMs;
      if (referenceParam)
        searches.push({
          pathname,
          referenceParam,
          items: read.items,
          lagMs: typeof lagMs === 'number' && lagMs > 0 ? lagMs : 0,
        });
    } else if (read.by === 'key') keyLookups.push(`^${escaped(pathname).replace(escaped('{key}'), '([^/?#]+)')}$`);
  }
  return {
    idField: spec.object.id ?? 'id',
    referenceField: spec.reference,
    createdAt: createdAtOf(spec.object.createdAt),
    listings,
    searches,
    keyLookups,
    ...(spec.idempotencyKey
      ? { key: { header: spec.idempotencyKey.header, retentionSeconds: spec.idempotencyKey.retentionSeconds } }
      : {}),
  };
}

/** Sets the value at a dot path in place, where every object along it exists. */
export function setAt(value: unknown, path: string, to: unknown): boolean {
  const parts = path.split('.');
  const last = parts.pop() as string;
  const parent = parts.length ? valueAt(value, parts.join('.')) : value;
  if (!isRecord(parent)) return false;
  parent[last] = to;
  return true;
}

/** A time as the provider wrote it, in ms since the epoch; NaN when it is none. */
export function timeOf(value: unknown, format: TimeFormat): number {
  if (typeof value === 'string') return Date.parse(value);
  if (typeof value !== 'number' || !Number.isFinite(value)) return Number.NaN;
  // Unix seconds until the year 5138; beyond that, milliseconds.
  return format === 'epoch-ms' || (format !== 'epoch-seconds' && value > 1e11) ? value : value * 1000;
}

/** `ms` written as the provider wrote `like` (ISO text, or a number in its unit). */
export function writtenLike(like: unknown, ms: number, format: TimeFormat): unknown {
  if (typeof like !== 'number') return new Date(ms).toISOString();
  return format === 'epoch-ms' || (format !== 'epoch-seconds' && like > 1e11) ? ms : Math.floor(ms / 1000);
}
