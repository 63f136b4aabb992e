// GETs for readback. A failed read is transient (thrown, so the activity retries with backoff);
// 404 is an answer, not a failure.
import { setTimeout as delay } from 'node:timers/promises';
import { deadlineSignal } from '../../domain/deadline-signal.js';
import { tracedFetch } from './protocol-spans.js';

export class ProviderReadError extends Error {
  override readonly name: string = 'ProviderReadError';
}

/**
 * The provider said "too many requests" (429) to a read: no verdict at all, only a request to come back later.
 * The readback activity turns it into a retry after `retryAfterMs` (the provider's Retry-After, or a second).
 */
export class ProviderRateLimitedError extends ProviderReadError {
  override readonly name = 'ProviderRateLimitedError';
  constructor(
    message: string,
    readonly retryAfterMs: number,
  ) {
    super(message);
  }
}

/** The readback's own bounds: its cancellation, and a heartbeat after each read. */
export interface ReadBounds {
  signal?: AbortSignal;
  onPage?: () => void;
  /** Waits for the request's turn under the destination's readback rate (ReadbackRequest.beforeRequest). */
  beforeRequest?: () => Promise<void>;
}

export async function getJson<T>(
  url: string,
  bounds: ReadBounds = {},
  /** The destination's credential header, when it has one (never logged, never in an error message). */
  headers: Record<string, string> = {},
  timeoutMs = 10_000,
): Promise<{ status: 200; body: T } | { status: 404 }> {
  await bounds.beforeRequest?.();
  // Held to the end of the body's read, which the deadline bounds too.
  const deadline = deadlineSignal(timeoutMs, bounds.signal);
  try {
    return await readJson<T>(url, headers, deadline.signal, bounds);
  } finally {
    deadline.clear();
  }
}

async function readJson<T>(
  url: string,
  headers: Record<string, string>,
  signal: AbortSignal,
  bounds: ReadBounds,
): Promise<{ status: 200; body: T } | { status: 404 }> {
  let response: Response;
  try {
    response = await tracedFetch(url, { headers, signal });
  } catch (error) {
    throw new ProviderReadError(`GET ${url} failed: ${(error as Error).message}`);
  }
  bounds.onPage?.();
  if (response.status === 404) {
    await response.body?.cancel();
    return { status: 404 };
  }
  if (response.status === 429) {
    await response.body?.cancel();
    const seconds = Number(response.headers.get('retry-after'));
    const retryAfterMs = Number.isFinite(seconds) && seconds >= 0 ? Math.max(1000, seconds * 1000) : 1000;
    throw new ProviderRateLimitedError(`GET ${url} answered 429 (retry after ${retryAfterMs} ms)`, retryAfterMs);
  }
  if (!response.ok) throw new ProviderReadError(`GET ${url} answered ${response.status}`);
  try {
    return { status: 200, body: (await response.json()) as T };
  } catch (error) {
    throw new ProviderReadError(`GET ${url} returned an unreadable body: ${(error as Error).message}`);
  }
}

/** The longest Retry-After a readback waits out in place for a further request (longer: the readback is retried). */
export const RETRY_AFTER_IN_PLACE_MS = 2_000;

/**
 * getJson for a further request of a readback under way (the object its key names): a 429 with a short Retry-After
 * is waited out and the GET made once more, taking its own turn again — a read changes nothing, and the requests
 * before it (the key) are not made again, as a retry of the whole readback would.
 */
export async function getJsonAgainAfter429<T>(
  url: string,
  bounds: ReadBounds = {},
  headers: Record<string, string> = {},
): Promise<{ status: 200; body: T } | { status: 404 }> {
  try {
    return await getJson<T>(url, bounds, headers);
  } catch (error) {
    if (!(error instanceof ProviderRateLimitedError) || error.retryAfterMs > RETRY_AFTER_IN_PLACE_MS) throw error;
    // Cancelled meanwhile: the 429 stands, and the readback is retried (or cancelled) as without the wait.
    await delay(error.retryAfterMs, undefined, bounds.signal ? { signal: bounds.signal } : {}).catch(() => {
      throw error;
    });
    return getJson<T>(url, bounds, headers);
  }
}

/**
 * The object ID in a URL of the shape `${baseUrl}${prefix}<id>` (same origin; a trailing slash, query and
 * fragment ignored), or null: how an adapter resolves a URL a human typed to the object it names.
 */
export function objectIdFromUrl(url: string, baseUrl: string, prefix: string): string | null {
  let typed: URL;
  let base: URL;
  try {
    typed = new URL(url);
    base = new URL(baseUrl);
  } catch {
    return null;
  }
  if (typed.origin !== base.origin) return null;
  const expected = `${base.pathname.replace(/\/+$/, '')}${prefix}`;
  const path = typed.pathname.replace(/\/+$/, '');
  if (!path.startsWith(expected)) return null;
  const rest = path.slice(expected.length);
  if (!rest || rest.includes('/')) return null;
  let id: string;
  try {
    id = decodeURIComponent(rest);
  } catch {
    return null;
  }
  return id === '.' || id === '..' || id.includes('/') ? null : id;
}
