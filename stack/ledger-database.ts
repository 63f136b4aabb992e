// A throwaway ledger: a fresh PostgreSQL database named for its purpose, with the committed migrations,
// opened. drop() closes it and removes the database (WITH FORCE: a connection left behind cannot keep it).
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { type Ledger, openLedger } from '../ledger/db.js';
import { migrateLedger } from '../ledger/migrate.js';

/** The server throwaway databases are created on, as a superuser (trust auth on loopback in the tests). */
export function databaseAdminUrl(env: NodeJS.ProcessEnv = process.env): string {
  return env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
}

export interface LedgerDatabase {
  url: string;
  ledger: Ledger;
  drop(): Promise<void>;
}

/** The database's URL: `effect_ledger_<purpose>_<random>` on the admin URL's server. */
export function throwawayLedgerUrl(purpose: string, adminUrl = databaseAdminUrl()): string {
  const url = new URL(adminUrl);
  url.pathname = `/effect_ledger_${purpose}_${randomBytes(5).toString('hex')}`;
  return url.toString();
}

export async function dropDatabase(url: string, adminUrl = databaseAdminUrl()): Promise<void> {
  const name = decodeURIComponent(new URL(url).pathname.slice(1));
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).finally(() => admin.end());
}

export async function createLedgerDatabase(purpose: string, adminUrl = databaseAdminUrl()): Promise<LedgerDatabase> {
  const url = throwawayLedgerUrl(purpose, adminUrl);
  await migrateLedger(url);
  const ledger = openLedger(url);
  return {
    url,
    ledger,
    async drop() {
      await ledger.close().catch(() => {});
      await dropDatabase(url, adminUrl);
    },
  };
}
