// drizzle-kit reads this to generate SQL migrations from ledger/schema.ts into ledger/migrations/.
import { defineConfig } from 'drizzle-kit';
import { databaseUrl } from './db.js';

export default defineConfig({
  dialect: 'postgresql',
  schema: './ledger/schema.ts',
  out: './ledger/migrations',
  dbCredentials: { url: databaseUrl() },
});
