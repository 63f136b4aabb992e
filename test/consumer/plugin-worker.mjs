#!/usr/bin/env node
// A worker the team already runs — its own workflow and activity — with effect-ledger added as a plugin. It hosts
// the built-in destinations and the team's own (payments-destination.mjs).
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import { databaseUrl, openLedger } from 'effect-ledger';
import { builtInDestinations, EffectLedgerPlugin } from 'effect-ledger/worker';
import * as activities from './activities.mjs'; // the team's own
import ownDestinations from './payments-destination.mjs';

const ledger = openLedger(databaseUrl()); // DATABASE_URL
const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS });
try {
  const effectLedger = new EffectLedgerPlugin({
    db: ledger.db,
    destinations: [...builtInDestinations, ...ownDestinations],
  });
  const worker = await Worker.create({
    connection,
    namespace: process.env.TEMPORAL_NAMESPACE,
    // The task queue the team's clients start effects on.
    taskQueue: process.env.TEMPORAL_TASK_QUEUE,
    // The team's workflows, and effect-ledger's: the module does `export * from 'effect-ledger/workflows'`.
    workflowsPath: fileURLToPath(new URL('./workflows.mjs', import.meta.url)),
    activities,
    plugins: [effectLedger],
  });
  await worker.run();
} finally {
  await connection.close();
  await ledger.close();
}
