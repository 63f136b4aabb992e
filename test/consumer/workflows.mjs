// The team's workflows, with effect-ledger's beside them in one bundle.
import { proxyActivities } from '@temporalio/workflow';

export * from 'effect-ledger/workflows';

const { greet } = proxyActivities({ startToCloseTimeout: '10 seconds' });

export async function greeting(name) {
  return greet(name);
}
