// Process entry of the bare baseline's worker (the bench spawns it as its own process, like
// workers/main.ts): TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE, EFFECT_LEDGER_PROVIDER_URL.
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { resolveTemporalTarget } from '../../client/temporal-connection.js';
import { providerUrl } from '../../workers/config.js';
import { connectWorkerNative } from '../../workers/temporal-worker-connection.js';
import { createBareActivities } from './bare-activities.js';

export const bareWorkflowsPath = fileURLToPath(new URL('./bare-workflow.ts', import.meta.url));

Runtime.install({ logger: new DefaultLogger('WARN') });
const config = resolveTemporalTarget();
const workflowBundle = await bundleWorkflowCode({
  workflowsPath: bareWorkflowsPath,
  logger: new DefaultLogger('WARN'),
});
const connection = await connectWorkerNative(config);
try {
  const worker = await Worker.create({
    connection,
    namespace: config.namespace,
    taskQueue: config.taskQueue,
    workflowBundle,
    activities: createBareActivities(providerUrl()),
  });
  process.stdout.write('bare worker RUNNING\n');
  await worker.run();
} finally {
  await connection.close();
}
