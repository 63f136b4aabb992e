// Registers cut-hooks.mjs before tsx (through NODE_OPTIONS), so the hooks see each file's TypeScript source.
import { register } from 'node:module';

register('./cut-hooks.mjs', import.meta.url, { data: JSON.parse(process.env.CHAOS_CUTS ?? '[]') });
