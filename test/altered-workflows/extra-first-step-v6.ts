// The frozen v6 code with an extra timer before its first step (extra-first-step.ts, for the v1–v6 histories).
import { sleep } from '@temporalio/workflow';
import type { EffectInput, EffectResult } from '../../workflows/v6/contract.js';
import { effectWorkflow as frozen } from '../../workflows/v6/effect-workflow.js';

export async function effectWorkflow(input: EffectInput): Promise<EffectResult> {
  await sleep('1 second');
  return frozen(input);
}
