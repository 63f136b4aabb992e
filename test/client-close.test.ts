// Closing the client while Temporal is unreachable must not kill the process that holds it (issue 29). The
// SDK's retry interceptor waits between attempts on timers that Connection.close() leaves running; an attempt
// that starts after the close throws "Channel has been shut down" inside its timer, an uncaught exception.
// A backend process (test/support/close-while-retrying.ts) connects, Temporal goes away, an approval retries,
// and the process closes its ledger: it must exit 0, its approval rejected with a typed error.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { startTemporal } from '../harness/temporal-target.js';
import { createLedgerDatabase, type LedgerDatabase } from '../stack/ledger-database.js';
import { spawnSupervised } from '../stack/reaper.js';
import { waitFor, within } from '../stack/wait-for.js';
import { loadTemporalConfig } from '../workers/config.js';

const child = fileURLToPath(new URL('./support/close-while-retrying.ts', import.meta.url));
const GRPC_CANCELLED = 1;

describe('closing the client while a call retries', { timeout: 120_000 }, () => {
  let env: TestWorkflowEnvironment | undefined;
  let ledger: LedgerDatabase;
  before(async () => {
    [env, ledger] = await Promise.all([startTemporal(), createLedgerDatabase('client_close')]);
  });
  after(async () => {
    await env?.teardown();
    await ledger?.drop();
  });

  test('Temporal down, an approval retrying: close() exits cleanly and rejects the approval, typed', async () => {
    assert.ok(env);
    const effectId = 'task:close-while-retrying';
    const config = loadTemporalConfig();
    const backend = spawnSupervised(process.execPath, ['--import', 'tsx', child], {
      env: {
        ...process.env,
        DATABASE_URL: ledger.url,
        TEMPORAL_ADDRESS: env.address,
        TEMPORAL_NAMESPACE: config.namespace,
        TEMPORAL_TASK_QUEUE: 'close-while-retrying',
        CLOSE_EFFECT_ID: effectId,
        GRPC_TRACE: 'resolving_call',
        GRPC_VERBOSITY: 'DEBUG',
      },
    });
    let stdout = '';
    backend.child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    const exit = new Promise<string>((resolve) =>
      backend.child.once('exit', (code, signal) => resolve(signal ? `signal ${signal}` : `code ${code}`)),
    );
    await waitFor(
      async () => stdout.includes('connected\n') || backend.child.exitCode !== null,
      'the backend to connect',
    );
    assert.equal(backend.child.exitCode, null, backend.output());

    // Temporal goes away; then the backend approves, and closes while the start is retrying.
    const down = env;
    env = undefined;
    await down.teardown();
    backend.child.kill('SIGUSR2');
    const ended = await within(exit, 'the backend to exit', 60_000);

    assert.equal(ended, 'code 0', `the backend exits cleanly; it printed:\n${backend.output()}`);
    assert.doesNotMatch(backend.output(), /Channel has been shut down/);
    const outcome = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}');
    assert.equal(outcome.settled, 'rejected', 'the approval could not start its workflow');
    assert.equal(outcome.name, 'ServiceError');
    assert.equal(outcome.serviceError, true);
    assert.equal(outcome.cause.code, GRPC_CANCELLED, `cancelled by the close: ${JSON.stringify(outcome)}`);
    assert.match(outcome.cause.details, /closed/);

    // What a user checks: the approval is in the ledger, waiting for a run (the reconciler starts it later).
    const [row] = await ledger.ledger.sql<{ stage: string }[]>`SELECT stage FROM effects WHERE effect_id = ${effectId}`;
    assert.ok(row, 'the approval was registered before the start was tried');
    assert.ok(!['recorded', 'rejected', 'abandoned'].includes(row.stage), `not finished: ${row.stage}`);
  });
});
