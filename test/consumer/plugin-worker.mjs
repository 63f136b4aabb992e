#!/usr/bin/env node
// A worker the team already runs — its own workflow and activity — with effect-ledger added as a plugin. It hosts
// the built-in destinations and the team's own (payments-destination.mjs).
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import { databaseUrl, openLedger } from 'effect-ledger';
import { builtInDestinations, EffectLedgerPlugin } from 'effect-ledger/worker';
import * as activities from './activities.mjs';
import ownDestinations from './payments-destination.mjs';

const ledger = openLedger(databaseUrl());
const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS });
try {
  const effectLedger = new EffectLedgerPlugin({
    db: ledger.db,
    destinations: [...builtInDestinations, ...ownDestinations],
  });
  const worker = await Worker.create({
    connection,
    namespace: process.env.TEMPORAL_NAMESPACE,
    taskQueue: process.env.TEMPORAL_TASK_QUEUE,
    workflowsPath: fileURLToPath(new URL('./workflows.mjs', import.meta.url)),
    activities,
    plugins: [effectLedger],
  });
  await worker.run();
} finally {
  await connection.close();
  await ledger.close();
}
