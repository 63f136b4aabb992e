// Readback by the stamped reference: a filter the provider applies over every object (complete coverage when the
// pages end), paged after the last object's ID or by an opaque next-page token (Stripe's search: next_page).
import type { ReadbackRequest, ReadbackResult } from '../../domain/destination-contract.js';
import type { ObjectReader } from './http-objects.js';
import { getJson, ProviderReadError } from './http-read.js';
import { DEFAULT_REFERENCE_PAGES, filled, type ReferenceReadback, textAt, valueAt, withParam } from './http-spec.js';

export async function byReference(
  reader: ObjectReader,
  read: ReferenceReadback,
  request: ReadbackRequest,
): Promise<ReadbackResult> {
  const { baseUrl, auth, idField, noun, isOurs, isExact, itemsOf, conclude } = reader;
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
