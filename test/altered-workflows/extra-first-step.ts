// A deliberately non-deterministic change, kept to prove the replay guard works: the effect workflow
// with an extra timer before its first step. Every recorded history must fail to replay against it.
import { sleep } from '@temporalio/workflow';
import type { EffectInput, EffectResult } from '../../workflows/contract.js';
import { effectWorkflow as current } from '../../workflows/effect-workflow.js';

export async function effectWorkflow(input: EffectInput): Promise<EffectResult> {
  await sleep('1 second');
  return current(input);
}
