// Custom search attributes the effect workflow keeps current, so operators can filter in the Web UI
// (e.g. `EffectStage = "unknown"`). They must be registered on the server: see temporal.yaml.
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const effectStageKey = defineSearchAttributeKey('EffectStage', SearchAttributeType.KEYWORD);
export const effectDestinationKey = defineSearchAttributeKey('EffectDestination', SearchAttributeType.KEYWORD);
export const effectOperationKey = defineSearchAttributeKey('EffectOperation', SearchAttributeType.KEYWORD);
/** The effect in one line, for the Web UI's workflow list (its static summary is not a list column). */
export const effectSummaryKey = defineSearchAttributeKey('EffectSummary', SearchAttributeType.KEYWORD);
/** The step a multi-step effect is on (e.g. `EffectStep = "announce"`); single-step effects never set it. */
export const effectStepKey = defineSearchAttributeKey('EffectStep', SearchAttributeType.KEYWORD);
/**
 * v7: what an effect at rest waits for: `look` (its next look at the destination), `person` (a decision; it goes on
 * looking), `resend` (a pause before the same key goes again), `worker` (a worker that hosts its destination).
 * Unset once it ends. With the stage and destination it is what a bulk decision selects (`decide --where`).
 */
export const effectAwaitingKey = defineSearchAttributeKey('EffectAwaiting', SearchAttributeType.KEYWORD);
export const AWAITING = ['look', 'person', 'resend', 'worker'] as const;
export type Awaiting = (typeof AWAITING)[number];
