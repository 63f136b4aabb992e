// The provider's request log, when it keeps one (our simulator: GET /_control/requests): every request that
// reached it, with its arrival time, Idempotency-Key and body hash. The audit uses it to check that every
// effectful request was preceded by its attempt row. A provider without one answers 404: the check is
// skipped, and the audit says so.

export interface LoggedRequest {
  at: Date;
  method: string;
  path: string;
  idempotencyKey: string | null;
  bodySha256: string | null;
  fault: string | null;
  answer: string | null;
}

export type RequestLog = { available: true; requests: LoggedRequest[] } | { available: false; why: string };

type Raw = Record<string, unknown>;

function pick(raw: Raw, ...names: string[]): unknown {
  for (const name of names) if (raw[name] !== undefined && raw[name] !== null) return raw[name];
  return undefined;
}

function text(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return value;
  if (typeof value === 'object') {
    const o = value as Raw;
    // e.g. a fault { kind } or an answer { status }
    const inner = o.kind ?? o.status ?? o.class;
    if (inner !== undefined) return String(inner);
    return JSON.stringify(value);
  }
  return String(value);
}

/** Reads the log, tolerant of its exact field names (camelCase or snake_case). */
export function parseRequestLog(body: unknown): LoggedRequest[] {
  const list = Array.isArray(body)
    ? body
    : ((body as Raw | null)?.data ?? (body as Raw | null)?.requests ?? (body as Raw | null)?.items);
  if (!Array.isArray(list)) throw new Error('request log: expected an array (or { data: [...] })');
  return list.map((item: Raw) => {
    const at = pick(item, 'arrivedAt', 'arrived_at', 'arrival', 'at', 'time', 'receivedAt', 'received_at');
    const headers = (pick(item, 'headers') as Raw | undefined) ?? {};
    return {
      at: new Date(typeof at === 'number' ? at : String(at)),
      method: String(pick(item, 'method') ?? 'GET').toUpperCase(),
      path: String(pick(item, 'path', 'url') ?? ''),
      idempotencyKey: text(
        pick(item, 'idempotencyKey', 'idempotency_key', 'key') ??
          headers['idempotency-key'] ??
          headers['Idempotency-Key'],
      ),
      bodySha256: text(pick(item, 'bodySha256', 'body_sha256', 'bodyHash', 'body_hash', 'sha256')),
      fault: text(pick(item, 'fault')),
      answer: text(pick(item, 'answer', 'status', 'response', 'outcome')),
    };
  });
}

export async function readRequestLog(baseUrl: string): Promise<RequestLog> {
  const response = await fetch(`${baseUrl}/_control/requests`, { signal: AbortSignal.timeout(30_000) });
  if (response.status === 404) {
    await response.body?.cancel();
    return { available: false, why: `${baseUrl}/_control/requests answered 404 (the provider keeps no request log)` };
  }
  if (!response.ok) throw new Error(`GET ${baseUrl}/_control/requests answered ${response.status}`);
  return { available: true, requests: parseRequestLog(await response.json()) };
}
