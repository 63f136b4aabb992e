// Test-only: a harness process that starts a stack, a worker process and a Mailpit (a Go server, as the
// cluster's are), prints the PIDs of what it started, and then hangs — for the test to SIGKILL
// (test/harness-cleanup.test.ts).
import { startStack } from '../../harness/local-stack.js';
import { startMailpit } from '../../harness/mailpit.js';
import { startWorkerProcess } from '../../harness/worker-process.js';
import { childProcessesMatching } from '../../stack/reaper.js';

const stack = await startStack({ purpose: 'stuck' });
const [worker, mailpit] = await Promise.all([startWorkerProcess(stack), startMailpit()]);
const port = stack.env.address.split(':').pop() ?? '';
process.stdout.write(
  `${JSON.stringify({
    pid: process.pid,
    devServer: childProcessesMatching('start-dev', `--port ${port}`),
    simulator: stack.simulator.child.pid,
    worker: worker.child.pid,
    mailpit: childProcessesMatching('--smtp', `127.0.0.1:${mailpit.smtpPort}`),
    database: new URL(stack.databaseUrl).pathname.slice(1),
  })}\n`,
);
setInterval(() => {}, 60_000); // stuck
