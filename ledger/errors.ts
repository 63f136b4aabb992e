// Typed errors of the ledger and the approval API. Each says what was wrong and changes nothing.

export type InvalidRequestCode =
  | 'malformed'
  | 'unknown_destination'
  | 'unknown_operation'
  | 'invalid_payload'
  | 'payload_too_large';

/** The request cannot be approved as written. Nothing was written anywhere. */
export class InvalidEffectRequestError extends Error {
  override readonly name = 'InvalidEffectRequestError';
  constructor(
    readonly code: InvalidRequestCode,
    message: string,
    readonly issues: string[] = [],
  ) {
    super(issues.length ? `${message}: ${issues.join('; ')}` : message);
  }
}

/** The effect ID exists with a different fingerprint: it is not the action that was approved. */
export class EffectConflictError extends Error {
  override readonly name = 'EffectConflictError';
  constructor(
    readonly effectId: string,
    readonly existingFingerprint: string,
    readonly requestedFingerprint: string,
  ) {
    super(
      `effect ${effectId} was approved with other parameters (fingerprint ${existingFingerprint.slice(0, 12)}…, this request ${requestedFingerprint.slice(0, 12)}…); approve a new effect ID instead`,
    );
  }
}

export class EffectNotFoundError extends Error {
  override readonly name = 'EffectNotFoundError';
  constructor(readonly effectId: string) {
    super(`no effect ${effectId} in the ledger`);
  }
}

/** The ledger refused a write that would break an invariant (e.g. a release whose body changed). */
export class LedgerInvariantError extends Error {
  override readonly name = 'LedgerInvariantError';
}

export type RevisionRefusal =
  /** Only a rejected effect takes a revision: a recorded, abandoned or still-running one does not. */
  | 'not_rejected'
  /** A revision keeps the approval's intent: destination, operation, and each step's target. */
  | 'intent_changed'
  /** A step that already has its fact stays as it happened: a revision cannot change what it sent. */
  | 'settled_step_changed';

/** A revision the ledger will not take. Nothing was written. */
export class RevisionRefusedError extends Error {
  override readonly name = 'RevisionRefusedError';
  constructor(
    readonly effectId: string,
    readonly code: RevisionRefusal,
    message: string,
  ) {
    super(`revision of effect ${effectId} refused (${code}): ${message}`);
  }
}

/**
 * A decision for an effect that has no running workflow to take it: finished, or stranded (the ledger shows
 * it unfinished, Temporal runs nothing for it). Nothing was delivered and nothing written.
 */
export class EffectNotRunningError extends Error {
  override readonly name = 'EffectNotRunningError';
  constructor(
    readonly effectId: string,
    readonly stage: string,
    readonly finished: boolean,
    /** Set while the ledger reconciler cannot start it: since when, how many tries, and why. */
    readonly startFailure: { reason: string; since: Date; failures: number } | null = null,
  ) {
    super(
      finished
        ? `effect ${effectId} is ${stage}: it is finished and its workflow has closed; there is nothing to decide`
        : `effect ${effectId} is ${stage} in the ledger but has no running workflow (stranded), so no decision can reach it; ${
            startFailure
              ? `the ledger reconciler has failed to start it since ${startFailure.since.toISOString()} (failed starts: ${startFailure.failures}): ${startFailure.reason}. Fix that cause (docs/reconciler.md), then decide again once it runs`
              : 'the ledger reconciler starts it again within its period; decide again once it runs'
          }`,
    );
  }
}
