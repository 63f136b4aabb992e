// The effect workflow's contract: its input, its result, its status query. Declared once here; the
// workflow, the client and the tests import these same constants.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { DECISION_BINDING_HINT, DECISION_EXAMPLES, type DecisionKind } from '../domain/decisions.js';
import type { Coverage, OutcomeClass, ReadbackOutcome } from '../domain/outcomes.js';
import type { EffectStage } from '../domain/stages.js';

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
  /** The destination's contract allows a same-key retry after readback proved absence. */
  retryAfterProvenAbsence: boolean;
  /**
   * How long the destination remembers our key, in seconds, counted from the first attempt; null or absent: no
   * expiry to heed (a transactional or natural key); 0: it honours no key at all. Past it a same-key retry is a new
   * request: never automatic, and a person's only once a look proved absence without the key.
   */
  keyRetentionSeconds?: number | null;
  /** While a human decision is awaited, readback runs again this often (a late object is still found). */
  readbackIntervalMs: number;
  /** The interval doubles after each look while the effect waits, up to this cap (per destination). */
  readbackMaxIntervalMs?: number;
  /**
   * Times one run wakes while it waits (a verdict that changed, a decision) before it continues as new, so a wait
   * of weeks never fills one history (the v7 default: 50; v6 counted its readbacks, default 24). Absent in v1 inputs.
   */
  readbacksPerRun?: number;
  /** Overrides the destination's absence grace (tests shorten it). Absent in v1/v2 inputs. */
  absenceGraceMs?: number;
  /** v4: the outbound steps in the order they leave, when there is more than one (else `main` alone). */
  steps?: StepInput[];
  /**
   * The release revision this run sends, when a person revised the refused effect (README, "Revisions");
   * absent: revision 1, the approval's. Attempts are numbered per revision, so a revision starts at attempt 1.
   */
  releaseRevision?: number;
  /** What the previous run knew, when this run continues a long wait for a human (v2). */
  carried?: CarriedState;
  /**
   * The attempt runs as a local activity on the worker that runs this workflow: no activity task and no workflow
   * task in between (7 history events on the happy path instead of 12). A worker that does not host the
   * destination answers not-hosted and the attempt goes as a regular activity to one that does. Absent (v7 inputs,
   * and the client's default): a regular activity, the UI's pending activity while it runs.
   */
  attemptLocally?: boolean;
}

/** One outbound step of a multi-step effect: its destination's own policy applies to it. */
export interface StepInput {
  step: string;
  destination: string;
  callTimeoutMs: number;
  retryAfterProvenAbsence: boolean;
  readbackMaxIntervalMs?: number;
  /** The step's destination's key retention (EffectInput.keyRetentionSeconds). */
  keyRetentionSeconds?: number | null;
  /** The step's released key, when it is not the step's own (a revision-scoped key): for the status only. */
  idempotencyKey?: string;
}

/** Handed from a run that continued as new to the next: the effect is still UNKNOWN, awaiting a human. */
export interface CarriedState {
  attempts: AttemptView[];
  /** The latest few only: the ledger keeps them all. */
  readbacks: ReadbackView[];
  decisions: DecisionView[];
  /** Same-key retries policy already made after proven absence (at most 3 per effect, not per run). */
  automaticRetries: number;
  /** How many runs came before this one. */
  runsBefore: number;
  /** v4, multi-step: the steps and how far each got; the first one not done is the one awaited. */
  steps?: StepView[];
  /** v5: the previous run was pausing after "not sent": this run sends again (same key), it does not read back. */
  resendPending?: boolean;
  /** v7: when the wait in UNKNOWN began (ISO): the looks go on on its schedule, not a new one. */
  waitingSince?: string;
}

/** One outbound step of a multi-step effect, as the status and the UI show it. */
export interface StepView {
  step: string;
  idempotencyKey: string;
  state: 'waiting' | 'in_progress' | 'done';
  externalId?: string;
  externalUrl?: string;
}

export interface AttemptView {
  /** Set for a multi-step effect: attempts are numbered per step. */
  step?: string;
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
  readbacks: ReadbackView[];
  decisions: DecisionView[];
  /** The release revision being sent, after a person's revision (absent: 1). */
  revision?: number;
  /** Multi-step effects: the step being carried now (the one the effect waits on), and every step. */
  step?: string;
  steps?: StepView[];
  /**
   * While a person's decision is awaited: what it answers, to type into the payload to bind it (step, revision,
   * attempt). A decision that arrives once the effect has moved past them is refused as stale.
   */
  decideOn?: { step: string; revision: number; attempt: number };
}

export interface ReadbackView {
  at: string;
  outcome: ReadbackOutcome;
  coverage: Coverage;
  method: string;
  reason: string;
}

export interface DecisionView {
  kind: string;
  actor: string;
  accepted: boolean;
  note: string;
}

export interface EffectResult {
  effectId: string;
  stage: EffectStage;
  externalId?: string;
  externalUrl?: string;
  reason?: string;
}

export const statusQuery = defineQuery<EffectStatus>('status');

/**
 * v7: the provider is back, look now: a waiting effect's next look is taken at once instead of at its scheduled
 * time (it changes nothing else; a look that finds the object records it). Sent in bulk by `effect-ledger decide
 * --look-now` or `temporal workflow signal --query … --name look-now`.
 */
/**
 * The activity whose attempts are a waiting effect's looks: resetting it (Temporal's activity reset) takes the next
 * look now, with no history event (client lookNow; `temporal activity reset --activity-type watchForObject`).
 */
export const LOOK_ACTIVITY = 'watchForObject';
export const lookNowSignal = defineSignal<[unknown]>('look-now');
export const lookNowSignalDescription =
  'Look for the object now instead of at the next scheduled look (while the effect waits in UNKNOWN; nothing else changes). Payload: {"actor": "you@example.com", "reason": "the provider is back"}';
export const statusQueryDescription =
  'The effect as the workflow sees it now: stage, attempts (number, key, outcome), result, what it awaits.';

// Human decisions, one JSON object each, so an operator can type them in the Web UI's signal dialog.
// Each payload carries the actor and a reason; garbage is recorded as a rejected decision.
export const approveRetrySignal = defineSignal<[unknown]>('approve-retry');
export const confirmDeliverySignal = defineSignal<[unknown]>('confirm-delivery');
export const abandonSignal = defineSignal<[unknown]>('abandon');

export const decisionSignalDescriptions: Record<DecisionKind, string> = {
  'approve-retry': `Retry the provider call with the SAME idempotency key (only while UNKNOWN). Payload: ${DECISION_EXAMPLES['approve-retry']}. ${DECISION_BINDING_HINT}`,
  'confirm-delivery': `The effect did happen: record it with evidence (checked against the destination where possible). Payload: ${DECISION_EXAMPLES['confirm-delivery']}. ${DECISION_BINDING_HINT}`,
  abandon: `Give up on this effect; nothing more is sent. Payload: ${DECISION_EXAMPLES.abandon}. Where the last look could not tell (inconclusive), add "checkedAbsent": true once you have seen at the destination that the object is not there; otherwise it is refused. ${DECISION_BINDING_HINT}`,
};

/**
 * Sent by effect-ledger's client when a person revised the refused effect (README, "Revisions"), with the effect
 * (re)started if no run is open: the run reads the ledger and, when it is on an older revision, hands the effect
 * to a run of the current one. It changes nothing by itself; an operator never needs to send it.
 */
export const revisionReleasedSignal = defineSignal<[unknown]>('revision-released');
export const revisionReleasedSignalDescription =
  'Sent by effect-ledger when a person revised the refused effect: the run checks the ledger and hands over to the new revision. Operators need not send it; it changes nothing by itself. Payload: {"revision": 2}';

/** The same decisions as an update, so a caller gets an answer; the validator refuses bad payloads. */
export interface DecideRequest {
  decision: DecisionKind;
  [field: string]: unknown;
}

export interface DecideResponse {
  accepted: boolean;
  stage: EffectStage;
  reason?: string;
  /** v5: this decision ID was taken before (by an earlier run): `accepted` is what was decided then; nothing new was done. */
  repeated?: boolean;
}

export const decideUpdate = defineUpdate<DecideResponse, [DecideRequest]>('decide');
export const decideUpdateDescription =
  'Decide on an UNKNOWN effect and get an answer: {"decision": "approve-retry" | "confirm-delivery" | "abandon", "actor": "…", "reason": "…", "externalId"?: "…", "externalUrl"?: "…", "checkedAbsent"?: true, "step"?: "…", "revision"?: 1, "attempt"?: 1}. ' +
  DECISION_BINDING_HINT;
