// The user's own orders database for the orders-sql destination: a fresh PostgreSQL database per stack,
// separate from the ledger's, with the table the adapter writes. drop() removes it.
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { claimDatabase } from './test-databases.js';

const adminUrl = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** The adapter's table: the order and its unique effect key in one row, so one INSERT commits both. */
const ORDERS_TABLE = `
  CREATE TABLE orders (
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
  drop(): Promise<void>;
}

export async function createOrdersDatabase(): Promise<OrdersDatabase> {
  const name = `orders_${randomBytes(5).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE "${name}"`).finally(() => admin.end());
  await claimDatabase(name, adminUrl);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const sql = postgres(url.toString(), { max: 2, onnotice: () => {} });
  await sql.unsafe(ORDERS_TABLE);
  const sessions: postgres.Sql[] = [];
  return {
    url: url.toString(),
    orders: () => sql`SELECT order_id::text, effect_key, body_sha256 FROM orders ORDER BY order_id`,
    session() {
      const session = postgres(url.toString(), { max: 1, onnotice: () => {} });
      sessions.push(session);
      return session;
    },
    async drop() {
      await Promise.allSettled([sql.end(), ...sessions.map((s) => s.end({ timeout: 0 }))]);
      const dropper = postgres(adminUrl, { max: 1, onnotice: () => {} });
      await dropper.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).finally(() => dropper.end());
    },
  };
}
