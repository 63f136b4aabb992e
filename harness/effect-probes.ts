// What a user checks about one effect: its stage as the workflow says it, and its ledger trail.

import type { EffectStage } from '../domain/stages.js';
import { type EffectResult, type EffectStatus, statusQuery } from '../workflows/contract.js';
import type { Stack } from './local-stack.js';
import { waitFor } from './wait-for.js';

/** Approves an effect while a worker polls, and waits for its workflow to close. */
export function runEffect(stack: Stack, request: { effectId: string }): Promise<EffectResult> {
  return stack.withWorker(async () => {
    await stack.effects.approve(request);
    return stack.effects.result(request.effectId);
  });
}

export function liveStatus(stack: Stack, effectId: string): Promise<EffectStatus> {
  return stack.env.client.workflow.getHandle(effectId).query(statusQuery);
}

/** Waits until the running workflow reports `stage` and says it awaits `awaiting` (a substring). */
export function waitForStage(
  stack: Stack,
  effectId: string,
  stage: EffectStage,
  awaiting?: string,
): Promise<EffectStatus> {
  return waitFor(
    async () => {
      const status = await liveStatus(stack, effectId);
      return status.stage === stage && (!awaiting || status.awaiting?.includes(awaiting)) ? status : undefined;
    },
    `${effectId} to reach ${stage}${awaiting ? ` awaiting "${awaiting}"` : ''}`,
  );
}

export async function objectsFor(stack: Stack, effectId: string) {
  return (await stack.simulator.objects()).filter((o) => o.metadata.effect_id === effectId);
}

export async function socialPostsFor(stack: Stack, effectId: string) {
  return (await stack.simulator.socialPosts()).filter((p) => p.metadata?.effect_id === effectId);
}
