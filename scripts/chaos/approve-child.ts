// A process that approves one effect and dies: the chaos run's "process killed between approval's ledger
// write and the workflow start". Reads the request from CHAOS_REQUEST and the stack from the environment.
//   CHAOS_DIE=at-start  the real approve() runs (validation, release, the ledger write); the moment it asks
//                       Temporal to start the workflow, the process SIGKILLs itself: the row is there, no run.
//   CHAOS_DIE=race      a real approve(); the parent SIGKILLs this process as soon as the effects row appears
//                       (the start may or may not have left by then).
import type { Client } from '@temporalio/client';
import { EffectLedgerClient } from '../../client/effect-ledger-client.js';
import { connectTemporalClient, resolveTemporalTarget } from '../../client/temporal-connection.js';
import { databaseUrl, openLedger } from '../../ledger/db.js';

const request = JSON.parse(process.env.CHAOS_REQUEST ?? '{}') as unknown;
const config = resolveTemporalTarget();
const ledger = openLedger(databaseUrl(), { max: 1 });
let client: Client;
if (process.env.CHAOS_DIE === 'at-start') {
  const die = () => {
    process.kill(process.pid, 'SIGKILL');
    return new Promise<never>(() => {});
  };
  client = { workflow: { start: die } } as unknown as Client;
} else {
  client = await connectTemporalClient(config);
}
const effects = new EffectLedgerClient({
  client,
  db: ledger.db,
  taskQueue: config.taskQueue,
  callTimeoutMs: Number(process.env.CHAOS_CALL_TIMEOUT_MS ?? 2000),
  readbackIntervalMs: Number(process.env.CHAOS_READBACK_INTERVAL_MS ?? 3000),
});
await effects.approve(request);
process.stdout.write('approved\n');
process.exit(0);
