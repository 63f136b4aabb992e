// The bare baseline's workflow (its own bundle): one activity, default retries. Workflow code: values
// only from @temporalio/workflow, everything else as types.
import { proxyActivities } from '@temporalio/workflow';
import type { BareActivities, BareEffectInput, BareEffectResult } from './bare-activities.js';

const { createObject } = proxyActivities<BareActivities>({ startToCloseTimeout: '30 seconds' });

export async function bareEffect(input: BareEffectInput): Promise<BareEffectResult> {
  return createObject(input);
}
