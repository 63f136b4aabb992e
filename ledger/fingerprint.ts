// Canonical JSON and its hash. The fingerprint says "still the action that was approved": it must not
// change with key order or whitespace, and must change with any meaningful value.
import { createHash } from 'node:crypto';

export class NotJsonError extends Error {
  override readonly name = 'NotJsonError';
}

/** JSON with object keys sorted recursively; throws on anything JSON cannot carry faithfully. */
export function canonicalJson(value: unknown, path = '$'): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new NotJsonError(`${path} is not a finite number`);
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map((item, i) => canonicalJson(item, `${path}[${i}]`)).join(',')}]`;
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v, `${path}.${k}`)}`).join(',')}}`;
  }
  throw new NotJsonError(`${path} is not a JSON value (${typeof value})`);
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Hash of the effect-defining fields only; display fields (summary, approver) are not part of it. */
export function effectFingerprint(fields: {
  destination: string;
  operation: string;
  payload: Record<string, unknown>;
}): string {
  return sha256Hex(
    canonicalJson({ destination: fields.destination, operation: fields.operation, payload: fields.payload }),
  );
}
