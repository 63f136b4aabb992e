// The worker process: `npm run worker`. Reads temporal.yaml, DATABASE_URL, EFFECT_LEDGER_PROVIDER_URL.
import { NativeConnection } from '@temporalio/worker';
import { createDestinations } from '../activities/destinations/registry.js';
import { databaseUrl, openLedger } from '../ledger/db.js';
import { loadTemporalConfig, providerUrl } from './config.js';
import { createEffectWorker } from './effect-worker.js';

const config = loadTemporalConfig();
const ledger = openLedger(databaseUrl());
const connection = await NativeConnection.connect({ address: config.address });
try {
  const worker = await createEffectWorker({
    connection,
    namespace: config.namespace,
    taskQueue: config.taskQueue,
    db: ledger.db,
    destinations: createDestinations({ providerUrl: providerUrl() }),
  });
  // Worker.run() stops gracefully on SIGINT/SIGTERM (the SDK installs those handlers).
  await worker.run();
} finally {
  await connection.close();
  await ledger.close();
}
