// An HTTP destination's objects as its declaration describes them: their URL, ID, creation time (read as declared),
// whether one is ours (our reference) and exact (our body's hash), and the verdict a readback strategy concludes
// from the objects it matched. Shared by the send and by each readback strategy (key, reference, listing).
import { DestinationResponseError } from '../../domain/destination.js';
import type { ReadbackRequest, ReadbackResult } from '../../domain/destination-contract.js';
import { foreignBodyVerdict } from './exact-match.js';
import { bearer } from './http-outcome.js';
import { ProviderReadError } from './http-read.js';
import { type HttpDestinationSpec, isRecord, textAt, valueAt } from './http-spec.js';
import { createdAtOf, readTime } from './http-time.js';

export interface HttpConnection {
  baseUrl: string;
  credential?: string;
}

export type ObjectReader = ReturnType<typeof objectReader>;

/** The declaration's objects at `baseUrl`, with the connection's credential header. */
export function objectReader(spec: HttpDestinationSpec, { baseUrl: base, credential }: HttpConnection) {
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

  return {
    spec,
    baseUrl,
    auth,
    noun,
    aNoun,
    idField,
    objectPrefix,
    objectUrl,
    isOurs,
    isExact,
    createdAt,
    itemsOf,
    found,
    conclude,
  };
}
