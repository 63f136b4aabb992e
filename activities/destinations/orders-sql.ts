// orders-sql: a table in the user's own PostgreSQL database (never the ledger's). Mechanism: transactional.
// One statement inserts the order together with its unique key (the effect's idempotency key): the
// effect and its key commit in the same transaction or not at all, so the key protects for as long as
// the row exists. Readback is a SELECT by that key. The `orders` table's shape is the user's; this
// adapter needs `effect_key text UNIQUE`, `body jsonb`, `body_sha256 text` and `created_at timestamptz`
// (stack/orders-db.ts creates it for the tests).
import postgres from 'postgres';
import type {
  DestinationAdapter,
  LookupResult,
  ReadbackRequest,
  ReadbackResult,
  SendOutcome,
} from '../../domain/destination-contract.js';
import { canonicalJson, sha256Hex } from '../../ledger/fingerprint.js';
import { foreignBodyVerdict } from './exact-match.js';
import { classifyTransportError } from './http-outcome.js';
import { ordersSqlContract } from './orders-sql-contract.js';
import { sqlSpan } from './protocol-spans.js';

export { ordersSqlContract };

interface OrderRow {
  order_id: string;
  effect_key: string;
  body_sha256: string;
  created_at: Date;
  created: boolean;
}

// SQLSTATE classes: data exceptions and integrity violations are the database's definitive "no";
// a rolled-back transaction (serialization failure, deadlock) applied nothing.
function classifyDatabaseError(error: unknown): SendOutcome | undefined {
  const { code, message } = error as { code?: string; message?: string };
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return undefined;
  const detail = { reason: `${code}: ${message ?? ''}`, errorCode: code };
  if (code.startsWith('22') || code.startsWith('23')) return { class: 'rejected', httpStatus: 400, detail };
  if (code.startsWith('40'))
    return { class: 'not_sent', detail: { ...detail, reason: `rolled back: ${detail.reason}` } };
  return { class: 'unknown', detail: { ...detail, reason: `the statement may have committed: ${detail.reason}` } };
}

// postgres.js reports a connection it could not open with these codes: the statement never left.
const NOT_CONNECTED = new Set(['CONNECT_TIMEOUT']);

function classifyError(error: unknown): SendOutcome {
  const database = classifyDatabaseError(error);
  if (database) return database;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && NOT_CONNECTED.has(code))
    return { class: 'not_sent', detail: { reason: `no connection to the database (${code})`, errorCode: code } };
  return classifyTransportError(error);
}

class CallTimeout extends Error {
  override readonly name = 'TimeoutError';
}

/**
 * One connection per call, ended with it: a statement that timed out must not leave a socket that a later
 * call would queue behind, and a refused connection is then always "nothing left".
 */
function withConnection<T>(
  databaseUrl: string,
  timeoutMs: number,
  operation: 'INSERT' | 'SELECT',
  fn: (sql: postgres.Sql) => Promise<T>,
): Promise<T> {
  return sqlSpan(databaseUrl, operation, 'orders', () => onConnection(databaseUrl, timeoutMs, fn));
}

async function onConnection<T>(databaseUrl: string, timeoutMs: number, fn: (sql: postgres.Sql) => Promise<T>) {
  const sql = postgres(databaseUrl, {
    max: 1,
    // No array-type query on connect: the INSERT is the connection's first statement, and a connection ended
    // while that query was pending rejected it unhandled inside postgres.js (seen with the upstream cut),
    // which takes a worker process down.
    fetch_types: false,
    connect_timeout: Math.max(1, Math.ceil(timeoutMs / 1000)),
    onnotice: () => {},
    connection: { application_name: 'effect-ledger' },
  });
  let timer: NodeJS.Timeout | undefined;
  const work = fn(sql);
  // When the timeout wins, ending the connection rejects the statement still pending (CONNECTION_DESTROYED):
  // that loser must not surface as an unhandled rejection, which would take the worker process down.
  work.catch(() => {});
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new CallTimeout(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
    await sql.end({ timeout: 0 });
  }
}

export function ordersSql(databaseUrl: string): DestinationAdapter {
  const select = (sql: postgres.Sql, column: 'effect_key' | 'order_id', value: string) =>
    sql<Omit<OrderRow, 'created'>[]>`
      SELECT order_id::text, effect_key, body_sha256, created_at FROM orders WHERE ${sql(column)} = ${value}`;
  const found = (row: Omit<OrderRow, 'created'>) => ({
    externalId: row.order_id,
    occurredAt: row.created_at.toISOString(),
  });
  return {
    ...ordersSqlContract,
    async send({ idempotencyKey, package: pkg, timeoutMs }): Promise<SendOutcome> {
      const bodySha256 = sha256Hex(canonicalJson(pkg.body));
      let row: OrderRow | undefined;
      try {
        // The order and its key in one statement (one transaction); on a key we already used, our row.
        [row] = await withConnection(
          databaseUrl,
          timeoutMs,
          'INSERT',
          (sql) => sql<OrderRow[]>`
          WITH inserted AS (
            INSERT INTO orders (effect_key, body, body_sha256)
            VALUES (${idempotencyKey}, ${sql.json(pkg.body as postgres.JSONValue)}, ${bodySha256})
            ON CONFLICT (effect_key) DO NOTHING
            RETURNING order_id::text, effect_key, body_sha256, created_at, true AS created)
          SELECT * FROM inserted
          UNION ALL
          SELECT order_id::text, effect_key, body_sha256, created_at, false FROM orders
          WHERE effect_key = ${idempotencyKey} AND NOT EXISTS (SELECT 1 FROM inserted)`,
        );
      } catch (error) {
        return classifyError(error);
      }
      if (!row)
        return { class: 'unknown', detail: { reason: 'our key is taken by a transaction not yet visible to us' } };
      if (row.body_sha256 !== bodySha256)
        return {
          class: 'rejected',
          httpStatus: 409,
          detail: { reason: `order ${row.order_id} holds our key with another body`, replayed: true },
        };
      return {
        class: 'confirmed',
        httpStatus: row.created ? 201 : 200,
        ...found(row),
        detail: { reason: row.created ? 'inserted' : 'our key already holds this order', replayed: !row.created },
      };
    },

    async readBack(request: ReadbackRequest): Promise<ReadbackResult> {
      const rows = await withConnection(databaseUrl, 10_000, 'SELECT', (sql) =>
        select(sql, 'effect_key', request.idempotencyKey),
      );
      request.onPage?.();
      const method = 'select_by_key';
      const [row] = rows;
      if (!row)
        return {
          outcome: 'absent',
          coverage: 'complete',
          detail: { method, reason: 'no order holds our key (the unique key covers every order)', scanned: 0 },
        };
      if (row.body_sha256 !== request.bodySha256) return foreignBodyVerdict(method, [row.order_id], 1);
      return {
        outcome: 'found',
        coverage: 'complete',
        ...found(row),
        detail: { method, reason: 'the order holding our key carries the released body', scanned: 1 },
      };
    },

    // Orders have no URLs: a person confirms with the order ID.
    resolveUrl: () => null,
    objectUrlShape: 'none (confirm with the order ID)',

    async lookup(externalId, request): Promise<LookupResult> {
      if (!/^[0-9]{1,18}$/.test(externalId)) return { exists: false };
      const [row] = await withConnection(databaseUrl, 10_000, 'SELECT', (sql) => select(sql, 'order_id', externalId));
      if (!row) return { exists: false };
      return {
        exists: true,
        ...found(row),
        matchesRelease: row.effect_key === request.idempotencyKey && row.body_sha256 === request.bodySha256,
      };
    },
  };
}
