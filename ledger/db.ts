// One connection pool to the ledger database, with drizzle on top of postgres.js.
import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import * as schema from './schema.js';

/** The pool underneath as well ($client): a statement that must time its own round trip reserves a connection. */
export type LedgerDb = PostgresJsDatabase<typeof schema> & { $client: postgres.Sql };

/** The ledger database every process opens unless DATABASE_URL names another. */
export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/effect_ledger';

/**
 * What the running processes use (workers, the CLI, backend code): in a deployment a member of
 * effect_ledger_runtime (migration 0007), which can read, insert and move a stage, and nothing more.
 */
export function databaseUrl(): string {
  return process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL;
}

/** The ledger's owner, for migrations only: DATABASE_OWNER_URL, else DATABASE_URL (one superuser, locally). */
export function ownerDatabaseUrl(): string {
  return process.env.DATABASE_OWNER_URL ?? databaseUrl();
}

export interface Ledger {
  db: LedgerDb;
  sql: postgres.Sql;
  close(): Promise<void>;
}

export interface LedgerOptions {
  max?: number;
  /** Called with every SQL statement sent (for counting in benchmarks). */
  onStatement?: (query: string) => void;
}

export function openLedger(url: string, options: LedgerOptions = {}): Ledger {
  const sql = postgres(url, {
    // As wide as the concurrency that uses it at once: 20 approvals or activities in flight queue on 5.
    max: options.max ?? 10,
    onnotice: () => {},
    debug: options.onStatement ? (_connection, query) => options.onStatement?.(query) : undefined,
  });
  return { db: drizzle(sql, { schema }), sql, close: () => sql.end({ timeout: 5 }) };
}
