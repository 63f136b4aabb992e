// The effect workflow's contract: its input, its result, its status query. Declared once here; the
// workflow, the client and the tests import these same constants.
import { defineQuery } from '@temporalio/workflow';
import type { EffectStage } from './stages.js';

export const EFFECT_WORKFLOW_TYPE = 'effectWorkflow';

/** What the workflow needs to carry one approved effect. Its ID is the workflow ID. */
export interface EffectInput {
  effectId: string;
  destination: string;
  operation: string;
  /** One line an operator can read: what this effect is. */
  summary: string;
  /** The destination call's own timeout; the activity gets a little more so the adapter classifies first. */
  callTimeoutMs: number;
}

export type OutcomeClass = 'not_sent' | 'confirmed' | 'rejected' | 'unknown';

export interface AttemptView {
  attemptNumber: number;
  idempotencyKey: string;
  startedAt: string;
  outcome: OutcomeClass | 'in_flight';
  detail?: string;
}

export interface EffectStatus {
  effectId: string;
  stage: EffectStage;
  destination: string;
  operation: string;
  summary: string;
  attempts: AttemptView[];
  externalId?: string;
  externalUrl?: string;
  /** What the workflow is waiting for, in words, or undefined when it is not waiting. */
  awaiting?: string;
}

export interface EffectResult {
  effectId: string;
  stage: EffectStage;
  externalId?: string;
  externalUrl?: string;
  reason?: string;
}

export const statusQuery = defineQuery<EffectStatus>('status');
export const statusQueryDescription =
  'The effect as the workflow sees it now: stage, attempts (number, key, outcome), result, what it awaits.';
