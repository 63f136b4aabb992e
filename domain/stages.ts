// The effect's stage machine, in one place: the README's stage diagram as data. Pure: the workflow,
// the ledger schema's CHECK and the unit tests all read it from here.
import type { OutcomeClass } from './outcomes.js';

export const EFFECT_STAGES = [
  'prepared', // approved and registered in the ledger; nothing released yet
  'released', // the exact package is fixed (immutable release row)
  'attempted', // an attempt row exists: a request may be leaving
  'unknown', // the request may have left and we do not know what happened: retries frozen
  'reconciled', // readback found the exact object
  'recorded', // the canonical fact is in the ledger
  'rejected', // the provider definitively refused
  'abandoned', // a human gave up on it, with a reason
] as const;

export type EffectStage = (typeof EFFECT_STAGES)[number];

export const TERMINAL_STAGES: readonly EffectStage[] = ['recorded', 'rejected', 'abandoned'];

/** Every allowed move, and why it exists. Anything not listed is a bug. */
export const TRANSITIONS: Readonly<Record<EffectStage, readonly EffectStage[]>> = {
  // prepared → recorded: a run that finds the effect's fact already in the ledger (it only reports it).
  prepared: ['released', 'recorded', 'abandoned'],
  released: ['attempted', 'abandoned'],
  // attempted → attempted is not a move: a "not sent" retry stays in the stage with a new attempt row.
  // attempted → abandoned: a human gave up while the provider kept refusing to take the request
  // ("not sent" every time): nothing is in flight.
  attempted: ['recorded', 'rejected', 'unknown', 'abandoned'],
  // unknown → attempted: a retry with the same key, decided by policy after proven absence or by a human.
  // unknown → recorded: a human confirmed delivery with evidence.
  unknown: ['reconciled', 'attempted', 'recorded', 'abandoned'],
  // reconciled → attempted: a multi-step effect's step was found by readback; its next step is attempted.
  reconciled: ['recorded', 'attempted'],
  recorded: [],
  rejected: [],
  abandoned: [],
};

export class IllegalStageTransitionError extends Error {
  override readonly name = 'IllegalStageTransitionError';
  constructor(
    readonly from: EffectStage,
    readonly to: EffectStage,
  ) {
    super(`effect stage cannot move from ${from} to ${to}`);
  }
}

export function isEffectStage(value: unknown): value is EffectStage {
  return typeof value === 'string' && (EFFECT_STAGES as readonly string[]).includes(value);
}

export function isTerminal(stage: EffectStage): boolean {
  return TERMINAL_STAGES.includes(stage);
}

export function canMove(from: EffectStage, to: EffectStage): boolean {
  return TRANSITIONS[from].includes(to);
}

/** Returns `to` when the move is allowed; throws otherwise. */
export function nextStage(from: EffectStage, to: EffectStage): EffectStage {
  if (!canMove(from, to)) throw new IllegalStageTransitionError(from, to);
  return to;
}

/** Where a provider outcome leads from `attempted` ("not_sent" stays: retry with the same key). */
export function stageAfterOutcome(outcome: OutcomeClass): EffectStage {
  switch (outcome) {
    case 'confirmed':
      return 'recorded';
    case 'rejected':
      return 'rejected';
    case 'unknown':
      return 'unknown';
    case 'not_sent':
      return 'attempted';
  }
}

/**
 * Where one step's outcome leads. A multi-step effect is `recorded` only when its last step is: a step
 * before it that is confirmed leaves the effect `attempted` (the next step goes), one found by readback
 * or confirmed by a person leaves it `reconciled`.
 */
export function stageAfterStepOutcome(outcome: OutcomeClass, lastStep = true): EffectStage {
  return outcome === 'confirmed' && !lastStep ? 'attempted' : stageAfterOutcome(outcome);
}

/** Where a step found (by readback or a person's checked evidence) leads. */
export function stageAfterStepFound(lastStep = true): EffectStage {
  return lastStep ? 'recorded' : 'reconciled';
}
