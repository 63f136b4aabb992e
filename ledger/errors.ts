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
