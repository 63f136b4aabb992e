// drizzle-kit reads this to generate SQL migrations from ledger/schema.ts into ledger/migrations/.
import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'postgresql',
  schema: './ledger/schema.ts',
  out: './ledger/migrations',
  dbCredentials: { url: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/effect_ledger' },
});
