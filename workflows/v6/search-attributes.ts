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
