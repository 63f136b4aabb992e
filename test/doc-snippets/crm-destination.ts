// docs/your-own-destination.md ("A destination written by hand") shows this file line for line (test/readme.test.ts
// checks it): a CRM's notes, with a connection written by hand. tsc compiles it; test/doc-blocks.test.ts sends,
// reads back and looks up through it against a stub CRM, and times a send out after its request left.
import { z } from 'zod';
import {
  bearer,
  bodySha256Of,
  classifyErrorStatus,
  type DestinationConnection,
  DestinationResponseError,
  defineContract,
  defineDestination,
  foreignBodyVerdict,
  getJson,
  isOutcome,
  type LookupResult,
  objectIdFromUrl,
  type ReadbackRequest,
  type ReadbackResult,
  type SendOutcome,
  type SendRequest,
  sendJson,
} from '../../activities/destinations/index.js';

/** A note as the CRM answers it. The CRM keeps no idempotency key: `external_ref` is ours, and searchable. */
interface Note {
  id: string;
  contact: string;
  text: string;
  external_ref: string;
  created_at: string; // ISO 8601
}

const note = z.object({ contact: z.string().min(1), text: z.string().min(1).max(5000) }).strict();

export const crmContract = defineContract({
  name: 'crm',
  mechanism: 'natural_key', // the CRM dedupes nothing, but a note carries our reference and can be found by it
  keyRetentionSeconds: null, // no key honoured
  keyScope: 'effect',
  operations: { 'note.create': note },
  callTimeoutMs: 10_000,
  absenceGraceMs: 5_000, // the CRM's search may lag its writes by a few seconds
  retryAfterProvenAbsence: true, // the search covers every note: absent means none was made
  readbackMaxIntervalMs: 60 * 60 * 1000,
  readbackRatePerSecond: 5,
  buildPackage: (reference, _operation, payload) => ({
    target: `note on ${String(payload.contact)}`,
    body: { ...payload, external_ref: reference },
  }),
  describe: (_operation, payload) => `a CRM note on ${String(payload.contact)}`,
});

/** The note is ours: our reference and the released body (the CRM keeps the body's fields as sent). */
function isOurs(found: Note, request: ReadbackRequest): boolean {
  const { contact, text, external_ref } = found;
  return bodySha256Of({ contact, text, external_ref }) === request.bodySha256;
}

function createdAt(found: Note): string {
  if (typeof found.created_at !== 'string' || Number.isNaN(Date.parse(found.created_at)))
    throw new DestinationResponseError('crm', 'created_at', `not ISO 8601 text: ${JSON.stringify(found.created_at)}`);
  return new Date(found.created_at).toISOString();
}

export function crmConnection(baseUrl: string, credential: string | undefined): DestinationConnection {
  const headers = bearer(credential);
  const noteUrl = (id: string) => `${baseUrl}/v1/notes/${encodeURIComponent(id)}`;
  return {
    objectUrlShape: `${baseUrl}/v1/notes/<id>`,

    async send(request: SendRequest): Promise<SendOutcome> {
      // sendJson classifies what is not an answer: refused before any byte left is not sent; a timeout (at
      // request.timeoutMs, or request.signal) after the request left is unknown, and readback settles it.
      const answer = await sendJson(
        'POST',
        `${baseUrl}/v1/notes`,
        request.package.body,
        headers,
        request.timeoutMs,
        request.signal,
      );
      if (isOutcome(answer)) return answer;
      if (answer.status < 200 || answer.status >= 300)
        // No key: a 429 or a 503 is unknown (the request left), another 4xx rejected, a 3xx or 5xx unknown.
        return classifyErrorStatus(answer.status, answer.body, answer.headers.get('retry-after'));
      const created = answer.body as Partial<Note> | null;
      if (typeof created?.id !== 'string' || created.id === '')
        return {
          class: 'unknown',
          httpStatus: answer.status,
          detail: { reason: 'a 2xx without a note ID', body: answer.body },
        };
      return {
        class: 'confirmed',
        httpStatus: answer.status,
        externalId: created.id,
        externalUrl: noteUrl(created.id),
        occurredAt: createdAt(created as Note),
        detail: { reason: `note ${created.id} created`, body: answer.body },
      };
    },

    async readBack(request: ReadbackRequest): Promise<ReadbackResult> {
      const reference = String(request.package.body.external_ref);
      const url = `${baseUrl}/v1/notes?external_ref=${encodeURIComponent(reference)}`;
      const page = await getJson<{ data: Note[]; has_more: boolean }>(url, request, headers);
      if (page.status === 404) throw new Error(`GET ${url}: 404, the search is missing`); // transient: retried
      const carrying = page.body.data.filter((found) => found.external_ref === reference);
      const ours = carrying.filter((found) => isOurs(found, request));
      const [first, ...others] = ours;
      if (first)
        return {
          outcome: 'found',
          coverage: page.body.has_more ? 'partial' : 'complete',
          externalId: first.id,
          externalUrl: noteUrl(first.id),
          occurredAt: createdAt(first),
          detail: {
            method: 'external_ref',
            reason: `note ${first.id} carries our reference and body`,
            ...(others.length ? { duplicates: others.map((found) => found.id) } : {}),
          },
        };
      if (carrying.length > 0)
        return foreignBodyVerdict(
          'external_ref',
          carrying.map((found) => found.id),
        );
      if (page.body.has_more)
        return {
          outcome: 'inconclusive',
          coverage: 'partial',
          detail: { method: 'external_ref', reason: 'the search has more pages than one' },
        };
      return {
        outcome: 'absent',
        coverage: 'complete',
        detail: { method: 'external_ref', reason: 'no note carries our reference' },
      };
    },

    async lookup(externalId: string, request: ReadbackRequest): Promise<LookupResult> {
      const found = await getJson<Note>(noteUrl(externalId), request, headers);
      if (found.status === 404) return { exists: false };
      return {
        exists: true,
        externalId,
        externalUrl: noteUrl(externalId),
        occurredAt: createdAt(found.body),
        matchesRelease: found.body.external_ref === request.package.body.external_ref && isOurs(found.body, request),
      };
    },

    resolveUrl: (url: string) => objectIdFromUrl(url, baseUrl, '/v1/notes/'),
  };
}

export default [
  defineDestination({
    contract: crmContract,
    connect: ({ env, credential }) => (env.CRM_URL ? crmConnection(env.CRM_URL, credential) : undefined),
  }),
];
