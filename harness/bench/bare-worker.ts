// Process entry of the bare baseline's worker (the bench spawns it as its own process, like
// workers/main.ts): TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE, EFFECT_LEDGER_PROVIDER_URL.
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { loadTemporalConfig, providerUrl } from '../../workers/config.js';
import { createBareActivities } from './bare-activities.js';

export const bareWorkflowsPath = fileURLToPath(new URL('./bare-workflow.ts', import.meta.url));

Runtime.install({ logger: new DefaultLogger('WARN') });
const config = loadTemporalConfig();
const workflowBundle = await bundleWorkflowCode({
  workflowsPath: bareWorkflowsPath,
  logger: new DefaultLogger('WARN'),
});
const connection = await NativeConnection.connect({ address: config.address });
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
