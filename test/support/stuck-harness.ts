// Test-only: a harness process that starts a stack and a worker process, prints the PIDs of what it
// started, and then hangs — for the test to SIGKILL (test/harness-cleanup.test.ts).
import { startStack } from '../../harness/local-stack.js';
import { startWorkerProcess } from '../../harness/worker-process.js';
import { childProcessesMatching } from '../../stack/reaper.js';

const stack = await startStack({ purpose: 'stuck' });
const worker = await startWorkerProcess(stack);
const port = stack.env.address.split(':').pop() ?? '';
process.stdout.write(
  `${JSON.stringify({
    devServer: childProcessesMatching('start-dev', `--port ${port}`),
    simulator: stack.simulator.child.pid,
    worker: worker.child.pid,
    database: new URL(stack.databaseUrl).pathname.slice(1),
  })}\n`,
);
setInterval(() => {}, 60_000); // stuck
