// Applies the committed drizzle-kit migrations, creating the database first when it does not exist.
// Usage: tsx ledger/migrate.ts   (DATABASE_OWNER_URL, else DATABASE_URL, selects the server, database and owner)

import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { openLedger, ownerDatabaseUrl } from './db.js';

const migrationsFolder = resolve(dirname(fileURLToPath(import.meta.url)), 'migrations');

export async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  if (!/^[A-Za-z0-9_]+$/.test(name)) throw new Error(`refusing to create database with name ${JSON.stringify(name)}`);
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const sql = postgres(admin.toString(), { max: 1, onnotice: () => {} });
  try {
    const found = await sql`SELECT 1 FROM pg_database WHERE datname = ${name}`;
    if (found.length === 0) {
      await sql.unsafe(`CREATE DATABASE "${name}"`).catch((error: { code?: string }) => {
        if (error.code !== '42P04') throw error; // created by a concurrent migrator meanwhile
      });
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
}

export async function migrateLedger(url: string = ownerDatabaseUrl()): Promise<void> {
  await ensureDatabase(url);
  const ledger = openLedger(url, { max: 1 });
  try {
    await migrate(ledger.db, { migrationsFolder });
  } finally {
    await ledger.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await migrateLedger();
  process.stdout.write(`ledger migrated: ${new URL(ownerDatabaseUrl()).pathname.slice(1)}\n`);
}
