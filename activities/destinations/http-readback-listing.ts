// Readback by a bounded scan of recent objects. Absent only when the scan reached a page wholly older than the
// attempt, less the declared clock tolerance (a pinned old object or a provider clock a few seconds off never ends
// it early), or the listing ended short of the provider's documented limit without moving under us.
import {
  DEFAULT_CLOCK_TOLERANCE_MS,
  type ReadbackRequest,
  type ReadbackResult,
} from '../../domain/destination-contract.js';
import type { ObjectReader } from './http-objects.js';
import { getJson, ProviderReadError } from './http-read.js';
import { type ListingReadback, textAt, withParam } from './http-spec.js';

export async function byListing(
  reader: ObjectReader,
  read: ListingReadback,
  request: ReadbackRequest,
): Promise<ReadbackResult> {
  const { baseUrl, auth, idField, noun, isOurs, isExact, itemsOf, conclude, createdAt } = reader;
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
