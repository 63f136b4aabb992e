// Readback by the key: the provider's record of our idempotency key names the object it made under it, or says a
// request with it is still being processed (inconclusive). Not known (404, or forgotten past its retention): no
// verdict here, the next strategy is tried.
import type { ReadbackRequest, ReadbackResult } from '../../domain/destination-contract.js';
import type { ObjectReader } from './http-objects.js';
import { getJson, getJsonAgainAfter429 } from './http-read.js';
import { filled, type KeyReadback, textAt, valueAt } from './http-spec.js';

export async function byKey(
  reader: ObjectReader,
  read: KeyReadback,
  request: ReadbackRequest,
): Promise<ReadbackResult | undefined> {
  const { baseUrl, auth, objectUrl, isExact, found, aNoun } = reader;
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
  // The key named the object: a 429 to its fetch repeats the fetch alone, not the key's lookup.
  const object = await getJsonAgainAfter429<unknown>(objectUrl(objectId), request, auth);
  if (object.status === 200 && isExact(object.body, request))
    return found(object.body, 'idempotency_key', `the key maps to ${aNoun} carrying our reference and body`);
  return undefined;
}
