// Where an adapter's answer crosses into the ledger: what it returns is checked here, not trusted. An adapter is the
// user's code (or a declaration read by ours); the ledger's facts and the workflow's automatic retries rest on
// what crosses here, so an answer that breaks the contract is turned into the honest answer it allows — a send
// that cannot be read is unknown (readback settles it), a readback that cannot be read is inconclusive (a person
// decides) — with why, naming the field. Nothing is retried for it: the same answer would be read the same way.
import type { ReadbackResult, SendOutcome } from '../domain/destination-contract.js';
import { factTime } from '../domain/fact-time.js';

/** A typed error an adapter threw about an answer it could not read (DestinationResponseError, by shape too). */
function responseError(error: unknown): { field: string; message: string; objectId?: string } | undefined {
  const e = error as { name?: unknown; field?: unknown; message?: unknown; objectId?: unknown } | null;
  if (e?.name !== 'DestinationResponseError' || typeof e.field !== 'string') return undefined;
  return {
    field: e.field,
    message: String(e.message),
    ...(typeof e.objectId === 'string' && e.objectId ? { objectId: e.objectId } : {}),
  };
}

/** A send's outcome as the ledger may take it: a confirmed answer without a usable ID or time is unknown. */
export function checkedSend(outcome: SendOutcome): SendOutcome {
  if (outcome.class !== 'confirmed') return outcome;
  const unusable =
    typeof outcome.externalId !== 'string' || outcome.externalId === ''
      ? "externalId: a confirmed send without the object's ID"
      : (() => {
          const time = factTime(outcome.occurredAt);
          return time.ok ? undefined : time.why;
        })();
  if (!unusable) return outcome;
  return {
    class: 'unknown',
    httpStatus: outcome.httpStatus,
    detail: {
      ...outcome.detail,
      reason: `the destination answered, but its answer cannot be recorded (${unusable}): readback settles it`,
      unreadable: unusable.split(':')[0],
    },
  };
}

/** A send that threw a DestinationResponseError: unknown (the request left), with why; undefined for any other. */
export function sendErrorOutcome(error: unknown): SendOutcome | undefined {
  const read = responseError(error);
  if (!read) return undefined;
  return {
    class: 'unknown',
    detail: {
      reason: `the destination answered, but its answer cannot be read as declared (${read.message}): readback settles it`,
      unreadable: read.field,
    },
  };
}

/**
 * A readback's verdict as the ledger and the workflow may take it. `absent` only over complete coverage (the
 * workflow retries automatically on it); `found` only with the object's ID and a readable creation time.
 */
export function checkedReadback(read: ReadbackResult): ReadbackResult {
  const broken = readbackIssue(read);
  if (!broken) return read;
  return {
    outcome: 'inconclusive',
    coverage: 'partial',
    detail: {
      ...read.detail,
      reason:
        `the adapter's verdict "${read.outcome}" cannot be taken (${broken}); ${read.detail?.reason ?? ''}`.trim(),
      unreadable: broken.split(':')[0],
    },
  };
}

function readbackIssue(read: ReadbackResult): string | undefined {
  const r = read as { outcome?: unknown; coverage?: unknown; externalId?: unknown; occurredAt?: unknown };
  if (r.outcome === 'absent' && r.coverage !== 'complete')
    return `coverage: absent over ${String(r.coverage)} coverage is no absence`;
  if (r.outcome === 'found') {
    if (typeof r.externalId !== 'string' || r.externalId === '') return 'externalId: a found object without its ID';
    const time = factTime(r.occurredAt);
    if (!time.ok) return time.why;
    return undefined;
  }
  if (r.outcome !== 'absent' && r.outcome !== 'inconclusive') return `outcome: ${String(r.outcome)} is no verdict`;
  return undefined;
}

/** A readback that threw a DestinationResponseError: inconclusive, naming the field; undefined for any other. */
export function readbackErrorVerdict(error: unknown, method = 'readback'): ReadbackResult | undefined {
  const read = responseError(error);
  if (!read) return undefined;
  return {
    outcome: 'inconclusive',
    coverage: 'partial',
    detail: {
      method,
      reason: `an answer cannot be read as declared (${read.message}); a person decides${read.objectId ? ` (the object is ${read.objectId})` : ''}`,
      unreadable: read.field,
    },
  };
}
