// What a provider call or a readback can conclude, and how a fact can be confirmed: the words the
// adapters classify into, the workflow branches on, and the ledger's CHECKs allow. Defined once here.

/** The classes of what one provider call returned. */
export const OUTCOME_CLASSES = ['not_sent', 'confirmed', 'rejected', 'unknown'] as const;
export type OutcomeClass = (typeof OUTCOME_CLASSES)[number];

/** What a readback concludes. `absent` is only ever claimed over complete coverage. */
export const READBACK_OUTCOMES = ['found', 'absent', 'inconclusive'] as const;
export type ReadbackOutcome = (typeof READBACK_OUTCOMES)[number];

/** How much of the destination a readback saw: "not in the first 10 items" is partial, never absent. */
export const COVERAGES = ['complete', 'partial'] as const;
export type Coverage = (typeof COVERAGES)[number];

/** Where a piece of provider evidence came from: an attempt's response, a readback, a human's check. */
export const EVIDENCE_KINDS = ['response', 'readback', 'human'] as const;
export type EvidenceKind = (typeof EVIDENCE_KINDS)[number];

/** Every outcome an evidence row may carry. */
export const EVIDENCE_OUTCOMES = [...OUTCOME_CLASSES, ...READBACK_OUTCOMES] as const;
export type EvidenceOutcome = (typeof EVIDENCE_OUTCOMES)[number];

/** How a fact was confirmed. */
export const CONFIRMATION_METHODS = ['provider_response', 'readback', 'human'] as const;
export type ConfirmationMethod = (typeof CONFIRMATION_METHODS)[number];
