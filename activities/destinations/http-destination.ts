// A destination declared, not written: an HTTP API that takes an idempotency key header (Stripe, Adyen, most
// payment and messaging APIs) or none, described as data — per operation its method, path and body; the key
// header with its retention and scope; where the step's reference is stamped; how an object is read back; the
// statuses the provider documents otherwise. The classification is this package's, the same for every API: "not
// sent" where the request never left (a refused connection), or where the provider promises it did not process it
// (429, 503 with Retry-After) AND a key it still remembers dedupes a resend — a promise, not a proof: the request did
// leave, and without a key it is unknown; unknown after anything else that may have reached the provider; rejected
// for a definitive 4xx. Read it a module at a time: http-spec.ts (the declaration), http-declaration.ts (what is
// refused at definition), http-objects.ts (an object as declared), http-send.ts (send and classification), and one
// module per readback strategy: http-readback-key.ts, http-readback-reference.ts, http-readback-listing.ts.

import { type Destination, DestinationResponseError, defineDestination } from '../../domain/destination.js';
import type { DestinationAdapter, LookupResult, ReadbackResult } from '../../domain/destination-contract.js';
import { httpContract } from './http-declaration.js';
import { type HttpConnection, objectReader } from './http-objects.js';
import { getJson, objectIdFromUrl } from './http-read.js';
import { byKey } from './http-readback-key.js';
import { byListing } from './http-readback-listing.js';
import { byReference } from './http-readback-reference.js';
import { httpSender } from './http-send.js';
import { type HttpDestinationSpec, textAt } from './http-spec.js';

export { httpContract } from './http-declaration.js';
export type { HttpConnection } from './http-objects.js';
export type {
  HttpDestinationSpec,
  HttpIdempotencyKey,
  HttpOperation,
  HttpPlan,
  HttpReadback,
  KeyReadback,
  ListingReadback,
  ReferenceReadback,
  StatusOverride,
} from './http-spec.js';
export { valueAt } from './http-spec.js';
export type { CreatedAtDeclaration, TimeFormat } from './http-time.js';

/** The adapter a worker hosts: the contract with its calls against `baseUrl`. */
export function httpAdapter(spec: HttpDestinationSpec, connection: HttpConnection): DestinationAdapter {
  const contract = httpContract(spec);
  const reader = objectReader(spec, connection);
  const { baseUrl, auth, idField, objectPrefix, objectUrl, isExact, createdAt } = reader;
  return {
    ...contract,
    ...httpSender(reader),

    async readBack(request): Promise<ReadbackResult> {
      for (const read of spec.readback) {
        const verdict =
          read.by === 'key'
            ? await byKey(reader, read, request)
            : read.by === 'reference'
              ? await byReference(reader, read, request)
              : await byListing(reader, read, request);
        if (verdict) return verdict;
      }
      return {
        outcome: 'inconclusive',
        coverage: 'partial',
        detail: { method: spec.readback.map((r) => r.by).join('+'), reason: 'no way of reading back could conclude' },
      };
    },

    async lookup(externalId, request): Promise<LookupResult> {
      const answer = await getJson<unknown>(objectUrl(externalId), request, auth);
      if (answer.status === 404) return { exists: false };
      // The object at the URL of the ID a person named is that object, whether or not it repeats its ID.
      const id = textAt(answer.body, idField) ?? externalId;
      // A person names the object: a time it shows that cannot be read does not stop them, the fact's time is then
      // when it was checked (a readback says why it could not conclude).
      let occurredAt = '';
      try {
        occurredAt = createdAt(answer.body);
      } catch (error) {
        if (!(error instanceof DestinationResponseError)) throw error;
      }
      return {
        exists: true,
        externalId: id,
        externalUrl: objectUrl(id),
        occurredAt: occurredAt || new Date().toISOString(),
        matchesRelease: isExact(answer.body, request),
      };
    },

    resolveUrl: (url) => objectIdFromUrl(url, baseUrl, objectPrefix),
    objectUrlShape: `${baseUrl}${objectPrefix}<id>`,
  };
}
/**
 * The declared destination: its contract for backend code, and `connect` for workers (hosted where the base URL
 * resolves in the worker's environment).
 */
export function httpDestination(spec: HttpDestinationSpec): Destination {
  const contract = httpContract(spec);
  return defineDestination({
    contract,
    connect(context) {
      const baseUrl = typeof spec.baseUrl === 'function' ? spec.baseUrl(context) : spec.baseUrl;
      if (!baseUrl) return undefined;
      return httpAdapter(spec, { baseUrl, ...(context.credential ? { credential: context.credential } : {}) });
    },
  });
}
