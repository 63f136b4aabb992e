// Sending a released package as its declaration says, and classifying the answer: a 2xx with the object's ID is
// confirmed; a documented status is what its declaration says (refused at definition where it could duplicate); any
// other is the package's classification (http-outcome.ts: "not sent" only on a provider's promise a key still
// dedupes, unknown after anything that may have reached the provider, rejected for a definitive 4xx).
import type { ReleasedPackage, SendOutcome, SendRequest } from '../../domain/destination-contract.js';
import type { ObjectReader } from './http-objects.js';
import { classifyErrorStatus, isOutcome, retryAfterMs, sendJson } from './http-outcome.js';
import { filled, textAt, valueAt } from './http-spec.js';

/** The send half of an HTTP destination's adapter: `unsendable` and `send`. */
export function httpSender(reader: ObjectReader) {
  const { spec, baseUrl, auth, idField, aNoun, objectUrl, createdAt } = reader;
  return {
    unsendable(operation: string, pkg: ReleasedPackage): string | undefined {
      const op = Object.hasOwn(spec.operations, operation) ? spec.operations[operation] : undefined;
      if (!op) return `${spec.name} declares no request for ${operation} on this worker`;
      if (filled(op.path, (field) => valueAt(pkg.body, field)) === null)
        return `${spec.name} ${operation}: the path ${op.path} cannot be filled from the released body`;
      return undefined;
    },
    async send({ idempotencyKey, operation, package: pkg, timeoutMs, signal }: SendRequest): Promise<SendOutcome> {
      const op = Object.hasOwn(spec.operations, operation) ? spec.operations[operation] : undefined;
      const path = op && filled(op.path, (field) => valueAt(pkg.body, field));
      // Both are fixed at approval; a deploy that dropped the operation sends nothing (and says so).
      if (!op || path === null || path === undefined)
        return {
          class: 'not_sent',
          detail: { reason: `${spec.name} has no request for ${operation} on this worker: nothing was sent` },
        };
      const headers = { ...auth, ...(spec.idempotencyKey ? { [spec.idempotencyKey.header]: idempotencyKey } : {}) };
      const answer = await sendJson(op.method ?? 'POST', `${baseUrl}${path}`, pkg.body, headers, timeoutMs, signal);
      if (isOutcome(answer)) return answer;
      const { status, headers: answered, body } = answer;
      if (status >= 200 && status < 300) {
        const id = textAt(body, idField);
        if (!id) return { class: 'unknown', httpStatus: status, detail: { reason: `2xx without ${aNoun} ID`, body } };
        const replay = spec.idempotencyKey?.replayedHeader;
        const replayed = replay ? answered.get(replay) === 'true' : false;
        return {
          class: 'confirmed',
          httpStatus: status,
          externalId: id,
          externalUrl: objectUrl(id),
          occurredAt: createdAt(body) || new Date().toISOString(),
          detail: { reason: replayed ? 'created (stored response replayed for our key)' : 'created', body, replayed },
        };
      }
      const override = Object.hasOwn(spec.statuses ?? {}, status) ? spec.statuses?.[status] : undefined;
      if (override) {
        const detail = { reason: `HTTP ${status}: ${override.reason}`, body };
        if (override.class === 'not_sent')
          return {
            class: 'not_sent',
            httpStatus: status,
            retryAfterMs: retryAfterMs(answered.get('retry-after')),
            detail,
          };
        return { class: override.class, httpStatus: status, detail };
      }
      return classifyErrorStatus(status, body, answered.get('retry-after'), {
        keyed: spec.idempotencyKey !== undefined,
      });
    },
  };
}
