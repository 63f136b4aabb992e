#!/usr/bin/env node
// `effect-ledger-migrate`: applies the ledger's migrations as its owner (DATABASE_OWNER_URL, else DATABASE_URL).
import { ownerDatabaseUrl } from './db.js';
import { migrateLedger } from './migrate.js';

await migrateLedger();
process.stdout.write(`ledger migrated: ${new URL(ownerDatabaseUrl()).pathname.slice(1)}\n`);
