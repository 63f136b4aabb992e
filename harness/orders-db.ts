// The user's own orders database for the orders-sql destination: a fresh PostgreSQL database per stack,
// separate from the ledger's, with the table the adapter writes. drop() removes it.
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';

const adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** The adapter's table: the order and its unique effect key in one row, so one INSERT commits both. */
const ORDERS_TABLE = `
  CREATE TABLE IF NOT EXISTS orders (
    order_id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    effect_key  text NOT NULL UNIQUE CHECK (length(effect_key) BETWEEN 1 AND 200),
    body        jsonb NOT NULL,
    body_sha256 text NOT NULL CHECK (body_sha256 ~ '^[0-9a-f]{64}$'),
    created_at  timestamptz NOT NULL DEFAULT now()
  )`;

export interface OrdersDatabase {
  url: string;
  /** Every order row (what the user would count). */
  orders(): Promise<Array<{ order_id: string; effect_key: string; body_sha256: string }>>;
  /** A session of its own, for a test that holds locks. */
  session(): postgres.Sql;
  /** Ends our sessions and keeps the database. */
  close(): Promise<void>;
  drop(): Promise<void>;
}

/**
 * A fresh database named at random; or, given a name, that database as it is (created when missing): the
 * demo keeps its orders between runs, as the ledger keeps its facts — a recreated table would number its
 * orders from 1 again, and the ledger refuses a second fact naming one object (order 1).
 */
export async function createOrdersDatabase(name?: string): Promise<OrdersDatabase> {
  const database = name ?? `orders_${randomBytes(5).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    const exists = name && (await admin`SELECT 1 FROM pg_database WHERE datname = ${name}`).length > 0;
    if (!exists) await admin.unsafe(`CREATE DATABASE "${database}"`); // CREATE DATABASE takes no transaction
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  const sql = postgres(url.toString(), { max: 2, onnotice: () => {} });
  await sql.unsafe(ORDERS_TABLE);
  const sessions: postgres.Sql[] = [];
  const close = async () => {
    await Promise.allSettled([sql.end(), ...sessions.map((s) => s.end({ timeout: 0 }))]);
  };
  return {
    url: url.toString(),
    // By the bigint, not the text the row carries (order 10 after order 9).
    orders: () => sql`SELECT order_id::text, effect_key, body_sha256 FROM orders ORDER BY orders.order_id`,
    session() {
      const session = postgres(url.toString(), { max: 1, onnotice: () => {} });
      sessions.push(session);
      return session;
    },
    close,
    async drop() {
      await close();
      const dropper = postgres(adminUrl, { max: 1, onnotice: () => {} });
      await dropper.unsafe(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`).finally(() => dropper.end());
    },
  };
}
