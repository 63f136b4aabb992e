// Captures an effect workflow's history as JSON, for replay tests (test/replay.test.ts).
//   npm run capture-history -- <effectId> [--out test/histories/<name>.json]
// The same JSON comes from `temporal workflow show -w <effectId> --output json`.
import { Client, Connection } from '@temporalio/client';
import { Command } from 'commander';
import { loadTemporalConfig } from '../workers/config.js';
import { captureHistory } from './history-file.js';

const program = new Command('capture-history')
  .argument('<effectId>')
  .option('--out <file>', 'where to write the JSON (default: test/histories/<effectId>.json)')
  .action(async (effectId: string, opts: { out?: string }) => {
    const config = loadTemporalConfig();
    const connection = await Connection.connect({ address: config.address });
    try {
      const out = opts.out ?? `test/histories/${effectId.replace(/[^A-Za-z0-9._-]/g, '_')}.json`;
      await captureHistory(new Client({ connection, namespace: config.namespace }), effectId, out);
      process.stdout.write(`${out}\n`);
    } finally {
      await connection.close();
    }
  });
await program.parseAsync();
