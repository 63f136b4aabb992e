// Turns what an HTTP exchange produced into the domain's outcome classes (domain/outcomes.ts). Shared by adapters of
// HTTP destinations; an adapter whose provider documents a status differently overrides it.

import { deadlineSignal } from '../../domain/deadline-signal.js';
import type { ResponseDetail, SendOutcome } from '../../domain/destination-contract.js';
import { tracedFetch } from './protocol-spans.js';

// Errors raised before any byte of the request left: the provider cannot have seen it.
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

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
    return {
      class: 'unknown',
      detail: { reason: 'timed out waiting for the response; the request may have been applied', errorCode: name },
    };
  }
  const code = errorCode(error);
  if (code && NOT_SENT_CODES.has(code)) {
    return {
      class: 'not_sent',
      detail: { reason: `connection failed before the request left (${code})`, errorCode: code },
    };
  }
  return {
    class: 'unknown',
    detail: {
      reason: `the exchange broke after the request may have left (${code ?? String(error)})`,
      errorCode: code,
    },
  };
}

/** The shortest wait a Retry-After buys: `Retry-After: 0` is no licence to resend at once. */
export const MIN_RETRY_AFTER_MS = 1000;

/** A Retry-After header in ms (seconds, at least MIN_RETRY_AFTER_MS), or undefined when there is none usable. */
export function retryAfterMs(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  return Number.isFinite(seconds) && seconds >= 0 ? Math.max(MIN_RETRY_AFTER_MS, seconds * 1000) : undefined;
}

/**
 * Classifies a non-2xx status. 2xx bodies are the adapter's to parse. A 429, or a 503 with Retry-After, is the
 * provider's promise that it did not process the request — a promise only, the request did leave: "not sent" (the
 * same key goes again) only where `keyed`, a key the provider still dedupes by. Without one it is unknown: a
 * proxy's 503 after the object was made would otherwise make a second one; readback settles it.
 */
export function classifyErrorStatus(
  status: number,
  body: unknown,
  retryAfter: string | null,
  { keyed = false }: { keyed?: boolean } = {},
): SendOutcome {
  const detail: ResponseDetail = { reason: `HTTP ${status}`, body };
  if (!keyed && (status === 429 || (status === 503 && retryAfter !== null)))
    return {
      class: 'unknown',
      httpStatus: status,
      detail: {
        ...detail,
        reason: `HTTP ${status}: the provider says it did not process the request, but nothing dedupes a resend (no key): readback settles it`,
      },
    };
  if (status === 429)
    return {
      class: 'not_sent',
      httpStatus: status,
      // Without a usable Retry-After the workflow backs off (doubling to a minute), never a fixed second.
      retryAfterMs: retryAfterMs(retryAfter),
      detail: { ...detail, reason: 'rate limited: not processed' },
    };
  if (status === 503 && retryAfter !== null) {
    return {
      class: 'not_sent',
      httpStatus: status,
      retryAfterMs: retryAfterMs(retryAfter),
      detail: { ...detail, reason: '503 with Retry-After: not processed' },
    };
  }
  // 409 means another request with this key is still in flight: that one may succeed.
  if (status === 409)
    return {
      class: 'unknown',
      httpStatus: status,
      detail: { ...detail, reason: 'the same key is in flight elsewhere' },
    };
  if (status >= 400 && status < 500)
    return {
      class: 'rejected',
      httpStatus: status,
      detail: { ...detail, reason: `definitive refusal (HTTP ${status})` },
    };
  return {
    class: 'unknown',
    httpStatus: status,
    detail: { ...detail, reason: `HTTP ${status}: the provider may have applied the request` },
  };
}

/** The header a destination's credential travels in; none without a credential. */
export function bearer(credential: string | undefined): Record<string, string> {
  return credential ? { authorization: `Bearer ${credential}` } : {};
}

export interface JsonExchange {
  status: number;
  headers: Headers;
  body: unknown;
}

/**
 * POSTs a JSON body and reads a JSON answer. What cannot be read as an answer comes back already
 * classified (transport failures, unparseable bodies); an answer is the adapter's to classify.
 */
export function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<JsonExchange | SendOutcome> {
  return sendJson('POST', url, body, headers, timeoutMs);
}

/** postJson with another method (PUT, PATCH): the same classification of what cannot be read as an answer. */
export async function sendJson(
  method: string,
  url: string,
  body: unknown,
  headers: Record<string, string>,
  timeoutMs: number,
  /** The call's own signal (SendRequest.signal): the request stops when it fires, as at the timeout. */
  signal?: AbortSignal,
): Promise<JsonExchange | SendOutcome> {
  let response: Response;
  let text: string;
  const deadline = deadlineSignal(timeoutMs, signal);
  try {
    response = await tracedFetch(url, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
      signal: deadline.signal,
      // A redirect is answered, never followed: following turns a POST into a GET elsewhere (or sends it, key
      // and credential, to another host), so a 3xx is unknown — the request may have been applied — and read back.
      redirect: 'manual',
    });
    text = await response.text();
  } catch (error) {
    return classifyTransportError(error);
  } finally {
    deadline.clear();
  }
  try {
    return { status: response.status, headers: response.headers, body: JSON.parse(text) as unknown };
  } catch {
    return {
      class: 'unknown',
      httpStatus: response.status,
      detail: { reason: 'unparseable response body', body: text.slice(0, 500) },
    };
  }
}

export function isOutcome(value: JsonExchange | SendOutcome): value is SendOutcome {
  return 'class' in value;
}
