// What the API refuses at definition (issue 26): every check of an HTTP destination's declaration, each naming the
// field the user wrote, and the contract the declaration makes — what backend code validates approvals against.
import { DestinationDefinitionError, defineContract } from '../../domain/destination.js';
import {
  DEFAULT_READBACK_RATE_PER_SECOND,
  type DestinationContract,
  MIN_READBACK_RATE_PER_SECOND,
  READBACK_RUN_MS,
  READBACK_TURN_FACTOR,
} from '../../domain/destination-contract.js';
import { cutText } from '../../domain/storable.js';
import { DEFAULT_REFERENCE_PAGES, filled, type HttpDestinationSpec, isRecord, stamped, valueAt } from './http-spec.js';
import { TIME_FORMATS } from './http-time.js';

/** What is wrong with a spec beyond its contract's fields; empty when it is sound. */
export function specIssues(spec: HttpDestinationSpec): string[] {
  const issues: string[] = [];
  const pathish = /^\/[^\s]*$/;
  const dotPath = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
  if (typeof spec.baseUrl !== 'string' && typeof spec.baseUrl !== 'function')
    issues.push('baseUrl: a URL, or a function of the worker environment');
  if (typeof spec.reference !== 'string' || !/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(spec.reference))
    issues.push('reference: a dot path such as metadata.effect_id');
  for (const [name, op] of Object.entries(spec.operations ?? {})) {
    if (!isRecord(op) || typeof op.path !== 'string' || !pathish.test(op.path))
      issues.push(`operations.${name}.path: a path under the base URL, starting with "/"`);
    if (op?.method !== undefined && !['POST', 'PUT', 'PATCH'].includes(op.method))
      issues.push(`operations.${name}.method: POST, PUT or PATCH`);
  }
  if (!isRecord(spec.object) || typeof spec.object.path !== 'string' || !/^\/[^\s{}]*\{id\}$/.test(spec.object.path))
    issues.push('object.path: the object URL under the base URL, ending in {id}: /v1/objects/{id}');
  if (!spec.object || !['string', 'function'].includes(typeof spec.object.bodySha256))
    issues.push('object.bodySha256: the field holding the body hash, or a function computing it from the object');
  if (!Array.isArray(spec.readback) || spec.readback.length === 0)
    issues.push('readback: at least one way to read an object back (by key, by reference, or a listing)');
  for (const [i, read] of (spec.readback ?? []).entries()) {
    if (!isRecord(read) || typeof read.path !== 'string' || !pathish.test(read.path))
      issues.push(`readback[${i}].path: a path under the base URL, starting with "/"`);
    if (read?.by === 'key' && !spec.idempotencyKey) issues.push(`readback[${i}]: by key needs idempotencyKey`);
    if (read?.by === 'key' && !read.path.includes('{key}')) issues.push(`readback[${i}].path: must hold {key}`);
    if (read?.by === 'reference' && !read.path.includes('{reference}'))
      issues.push(`readback[${i}].path: must hold {reference} (the provider filters on it)`);
    if (read?.by === 'listing' && !(Number.isSafeInteger(read.maxPages) && read.maxPages >= 1))
      issues.push(`readback[${i}].maxPages: how many pages bound the scan (≥ 1)`);
    if (
      read?.by === 'listing' &&
      read.clockToleranceMs !== undefined &&
      !(Number.isSafeInteger(read.clockToleranceMs) && read.clockToleranceMs >= 0)
    )
      issues.push(`readback[${i}].clockToleranceMs: how far the provider's clock may be off ours, whole ms (≥ 0)`);
    if (read?.by === 'reference' && typeof read.hasMore !== 'string' && typeof read.nextPage !== 'string')
      issues.push(`readback[${i}].hasMore: where the answer says more pages follow (or nextPage: its next-page token)`);
    if (read?.by === 'reference' && typeof read.cursorParam !== 'string')
      issues.push(`readback[${i}].cursorParam: the query parameter taking the next page's cursor or token`);
    if (read?.by === 'reference' && read.lagMs !== undefined) {
      if (!(Number.isSafeInteger(read.lagMs) && read.lagMs >= 0))
        issues.push(`readback[${i}].lagMs: how long the search may lag writes, whole ms (≥ 0)`);
      else if (Number.isSafeInteger(spec.absenceGraceMs) && spec.absenceGraceMs < read.lagMs)
        issues.push(
          `absenceGraceMs: ${spec.absenceGraceMs} ms is shorter than readback[${i}].lagMs (${read.lagMs} ms): a search that has not caught up would be read as absence`,
        );
    }
    if (!['key', 'reference', 'listing'].includes(read?.by))
      issues.push(`readback[${i}].by: key, reference or listing`);
  }
  for (const [status, override] of Object.entries(spec.statuses ?? {})) {
    const code = Number(status);
    if (!Number.isInteger(code) || code < 300 || code > 599)
      issues.push(`statuses.${status}: a non-2xx HTTP status (2xx answers are parsed, never overridden)`);
    if (!['not_sent', 'rejected', 'unknown'].includes(override?.class))
      issues.push(`statuses.${status}.class: not_sent, rejected or unknown`);
    // "Not sent" resends the same request: safe only where the provider promises it did not process it (a 4xx
    // such as 429; a 3xx or 5xx may come after it was applied, from the API or a proxy in front of it) AND a key
    // still dedupes the resend should the promise be wrong.
    else if (override.class === 'not_sent' && (!spec.idempotencyKey || code < 400 || code > 499 || code === 409))
      issues.push(
        `statuses.${status}.class: not_sent ${
          !spec.idempotencyKey
            ? 'needs an idempotencyKey that dedupes the resend (this declaration has no key): declare unknown'
            : `only for a 4xx the provider documents as not processed, like 429 (a ${code} may follow a request that was applied or is in flight): declare unknown`
        }`,
      );
    // "Rejected" ends the effect (a revision may make a new request): never where our request may be applied.
    else if (override.class === 'rejected' && (code < 400 || code > 499 || code === 409))
      issues.push(
        `statuses.${status}.class: rejected only for a definitive 4xx refusal; a ${code} may follow a request that was applied or is still in flight (a revision would then make a second object): declare unknown`,
      );
    if (typeof override?.reason !== 'string' || !override.reason.trim())
      issues.push(`statuses.${status}.reason: where the provider documents it (a status is unknown otherwise)`);
  }
  const created = spec.object?.createdAt;
  if (
    created !== undefined &&
    !(typeof created === 'string' && dotPath.test(created)) &&
    !(isRecord(created) && typeof created.path === 'string' && dotPath.test(created.path))
  )
    issues.push(
      "object.createdAt: a dot path (ISO text), or { path, format } — e.g. { path: 'created', format: 'epoch-seconds' }",
    );
  else if (isRecord(created) && !TIME_FORMATS.includes(created.format as never))
    issues.push(`object.createdAt.format: one of ${TIME_FORMATS.join(', ')} (how the API writes the time)`);
  const key = spec.idempotencyKey;
  // Named as the user wrote it (the contract's own check would say keyRetentionSeconds).
  if (key && !(Number.isSafeInteger(key.retentionSeconds) && key.retentionSeconds >= 1))
    issues.push('idempotencyKey.retentionSeconds: how long the provider remembers a key, in whole seconds (≥ 1)');
  // Every request of a readback takes its turn at the declared rate, within the readback's run: one that cannot fit
  // them is retried for good, and a decision waiting behind it is never answered.
  const rate = spec.readbackRatePerSecond ?? DEFAULT_READBACK_RATE_PER_SECOND;
  const requests = (spec.readback ?? []).reduce(
    (sum, read) =>
      sum +
      (read?.by === 'key'
        ? 2
        : read?.by === 'reference'
          ? (read.maxPages ?? DEFAULT_REFERENCE_PAGES)
          : read?.by === 'listing' && Number.isSafeInteger(read.maxPages)
            ? read.maxPages + 1
            : 0),
    0,
  );
  const needsMs = (requests * READBACK_TURN_FACTOR * 1000) / rate;
  if (typeof rate === 'number' && rate >= MIN_READBACK_RATE_PER_SECOND && needsMs > READBACK_RUN_MS)
    issues.push(
      `readbackRatePerSecond: a readback makes up to ${requests} requests (readback's pages and lookups), which take ${Math.round(needsMs / 1000)} s of turns at ${rate} a second — more than the ${READBACK_RUN_MS / 1000} s a readback runs: raise the rate or lower maxPages`,
    );
  if (key && (typeof key.header !== 'string' || !/^[A-Za-z0-9-]+$/.test(key.header)))
    issues.push('idempotencyKey.header: a header name, e.g. Idempotency-Key');
  return issues;
}

const TARGET_MAX = 300;
const fitted = (text: string) => cutText(text, TARGET_MAX);

/** The destination's contract, from its declaration: what backend code validates approvals against. */
export function httpContract(spec: HttpDestinationSpec): DestinationContract {
  const issues = specIssues(spec);
  if (issues.length) throw new DestinationDefinitionError(JSON.stringify(spec.name), issues);
  const plans = spec.plans ?? {};
  const contract: DestinationContract = {
    name: spec.name,
    mechanism: spec.idempotencyKey ? 'idempotency_key' : 'none',
    keyRetentionSeconds: spec.idempotencyKey?.retentionSeconds ?? null,
    // A destination honouring no key cannot confuse a revision's request with the refused one's by its key.
    keyScope: spec.idempotencyKey?.scope ?? 'effect',
    ...(spec.idempotencyKey ? { keyHeader: spec.idempotencyKey.header } : {}),
    operations: {
      ...Object.fromEntries(Object.entries(spec.operations).map(([name, op]) => [name, op.schema])),
      ...Object.fromEntries(Object.entries(plans).map(([name, plan]) => [name, plan.schema])),
    },
    ...(spec.plans
      ? { steps: Object.fromEntries(Object.entries(plans).map(([name, plan]) => [name, plan.steps])) }
      : {}),
    callTimeoutMs: spec.callTimeoutMs,
    retryAfterProvenAbsence: spec.retryAfterProvenAbsence,
    absenceGraceMs: spec.absenceGraceMs,
    readbackMaxIntervalMs: spec.readbackMaxIntervalMs,
    ...(spec.readbackRatePerSecond === undefined ? {} : { readbackRatePerSecond: spec.readbackRatePerSecond }),
    buildPackage(reference, operation, payload) {
      const op = Object.hasOwn(spec.operations, operation) ? spec.operations[operation] : undefined;
      if (!op)
        throw new Error(
          `${spec.name}: operation ${operation} is a plan of steps, or unknown; it never leaves as one request`,
        );
      const body = op.body ? op.body(payload, reference) : stamped(payload, spec.reference, reference);
      // Readback looks for the reference where the declaration says it is: a body without it could never be found.
      if (valueAt(body, spec.reference) !== reference)
        throw new Error(`${spec.name} ${operation}: the body must carry the step's reference at ${spec.reference}`);
      const path = filled(op.path, (field) => valueAt(body, field));
      if (path === null)
        throw new Error(
          `${spec.name} ${operation}: the body has no usable value for a field the path ${op.path} needs`,
        );
      return { target: fitted(op.target ? op.target(payload) : `${op.method ?? 'POST'} ${path}`), body };
    },
    describe(operation, payload) {
      if (spec.describe) return spec.describe(operation, payload);
      const op = Object.hasOwn(spec.operations, operation) ? spec.operations[operation] : undefined;
      return op?.target ? `${operation}: ${op.target(payload)}` : `${operation} on ${spec.name}`;
    },
  };
  return defineContract(contract);
}
