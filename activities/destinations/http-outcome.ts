// Turns what an HTTP exchange produced into DESIGN.md's outcome classes. Shared by adapters of
// HTTP destinations; an adapter whose provider documents a status differently overrides it.
import type { ResponseDetail, SendOutcome } from './destination.js';

// Errors raised before any byte of the request left: the provider cannot have seen it.
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current && typeof current === 'object'; depth++) {
    const { code, cause } = current as { code?: unknown; cause?: unknown };
    if (typeof code === 'string') return code;
    current = cause;
  }
  return undefined;
}

/** A fetch that threw: refused before sending is "not sent"; anything else may have reached the provider. */
export function classifyTransportError(error: unknown): SendOutcome {
  const name = (error as { name?: string } | null)?.name;
  if (name === 'TimeoutError' || name === 'AbortError') {
    return { class: 'unknown', detail: { reason: 'timed out waiting for the response; the request may have been applied', errorCode: name } };
  }
  const code = errorCode(error);
  if (code && NOT_SENT_CODES.has(code)) {
    return { class: 'not_sent', detail: { reason: `connection failed before the request left (${code})`, errorCode: code } };
  }
  return {
    class: 'unknown',
    detail: { reason: `the exchange broke after the request may have left (${code ?? String(error)})`, errorCode: code },
  };
}

export function retryAfterMs(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined;
}

/** Classifies a non-2xx status. 2xx bodies are the adapter's to parse. */
export function classifyErrorStatus(status: number, body: unknown, retryAfter: string | null): SendOutcome {
  const detail: ResponseDetail = { reason: `HTTP ${status}`, body };
  if (status === 429) return { class: 'not_sent', httpStatus: status, retryAfterMs: retryAfterMs(retryAfter) ?? 1000, detail: { ...detail, reason: 'rate limited: not processed' } };
  if (status === 503 && retryAfter !== null) {
    return { class: 'not_sent', httpStatus: status, retryAfterMs: retryAfterMs(retryAfter) ?? 1000, detail: { ...detail, reason: '503 with Retry-After: not processed' } };
  }
  // 409 means another request with this key is still in flight: that one may succeed.
  if (status === 409) return { class: 'unknown', httpStatus: status, detail: { ...detail, reason: 'the same key is in flight elsewhere' } };
  if (status >= 400 && status < 500) return { class: 'rejected', httpStatus: status, detail: { ...detail, reason: `definitive refusal (HTTP ${status})` } };
  return { class: 'unknown', httpStatus: status, detail: { ...detail, reason: `HTTP ${status}: the provider may have applied the request` } };
}
