// A provider's creation time, as its declaration says it writes it: ISO 8601 text, unix seconds (Stripe's
// `created`), or unix milliseconds. Every time an HTTP destination hands on (a send's occurredAt, a readback's,
// a lookup's) is read here and leaves as ISO text; one that cannot be read as declared is a typed error naming
// the field, never a string the ledger's `::timestamptz` or `new Date` would choke on.

/** How a provider writes a time. */
export type TimeFormat = 'iso' | 'epoch-seconds' | 'epoch-ms';
export const TIME_FORMATS: readonly TimeFormat[] = ['iso', 'epoch-seconds', 'epoch-ms'];

/**
 * Where an object carries its creation time: a dot path, or the path with its format. A plain path reads ISO text as
 * before formats were declared, and a JSON number by its size (unix seconds below 1e11, milliseconds above: the two
 * never overlap for a time after 1973); a declared format holds the API to it.
 */
export type CreatedAtDeclaration = string | { path: string; format: TimeFormat };

/** How a plain path reads a time: ISO text, or a number detected as unix seconds or milliseconds. */
export type ReadFormat = TimeFormat | 'detected';

/** The path and format a declaration names (a plain string: ISO text, or a number detected). */
export function createdAtOf(declared: CreatedAtDeclaration | undefined): { path: string; format: ReadFormat } {
  if (declared === undefined) return { path: 'created_at', format: 'detected' };
  return typeof declared === 'string' ? { path: declared, format: 'detected' } : declared;
}

/**
 * Times outside these bounds are not read as creation times: a value in milliseconds declared as seconds lands in
 * the year 55000, seconds declared as milliseconds in January 1970 — either is a declaration that misreads the API.
 */
const EARLIEST_MS = Date.UTC(2000, 0, 1);
const LATEST_MS = Date.UTC(2200, 0, 1);

export type TimeReading = { ok: true; iso: string } | { ok: false; why: string };

/** `value` read as `format`, as ISO text; or why it cannot be. */
export function readTime(value: unknown, declared: ReadFormat): TimeReading {
  const format: TimeFormat =
    declared !== 'detected'
      ? declared
      : typeof value !== 'number'
        ? 'iso'
        : value < 1e11
          ? 'epoch-seconds'
          : 'epoch-ms';
  let ms: number;
  if (format === 'iso') {
    if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}/.test(value))
      return { ok: false, why: `${shown(value)} is not ISO 8601 text (declare its format: epoch-seconds or epoch-ms)` };
    ms = Date.parse(value);
  } else {
    const n =
      typeof value === 'number'
        ? value
        : typeof value === 'string' && /^\d+(\.\d+)?$/.test(value)
          ? Number(value)
          : NaN;
    if (!Number.isFinite(n)) return { ok: false, why: `${shown(value)} is not a number of ${unit(format)}` };
    ms = format === 'epoch-seconds' ? n * 1000 : n;
  }
  if (!Number.isFinite(ms)) return { ok: false, why: `${shown(value)} is no time` };
  if (ms < EARLIEST_MS || ms >= LATEST_MS)
    return {
      ok: false,
      why: `${shown(value)} read as ${format} is ${Math.abs(ms) <= 8.64e15 ? new Date(ms).toISOString().slice(0, 10) : 'beyond any date'}, not a creation time (is the format right?)`,
    };
  return { ok: true, iso: new Date(ms).toISOString() };
}

const unit = (format: TimeFormat) => (format === 'epoch-seconds' ? 'seconds since 1970' : 'milliseconds since 1970');

function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}
