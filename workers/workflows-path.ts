// Where effect-ledger's workflow code is, for a worker to bundle: index.ts beside this module's source under tsx,
// index.js beside the compiled package's module.
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';

export const workflowsPath = fileURLToPath(
  new URL(`../workflows/index${extname(fileURLToPath(import.meta.url))}`, import.meta.url),
);
