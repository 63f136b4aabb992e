// Activities of an effect frozen in UNKNOWN: readback (reads only, never writes to the destination),
// human decisions, and checking a human's evidence against the destination.
import { ApplicationFailure } from '@temporalio/activity';
import type { Decision } from '../domain/decisions.js';
import type { ReadbackRequest, ReadbackResult, ReleasedPackage } from '../domain/destination-contract.js';
import { idempotencyKeyFor } from '../domain/idempotency-key.js';
import type { EffectStage } from '../domain/stages.js';
import type { LedgerDb } from '../ledger/db.js';
import { type DecisionInput, recordDecision, recordEvidence } from '../ledger/progress.js';
import { readRelease } from '../ledger/trail.js';
import type { Destinations } from './destinations/registry.js';

export interface ReadbackTarget {
  effectId: string;
  step: string;
  releaseRevision: number;
  /** When the first attempt started: the object cannot be older. */
  since: string;
}

export type ConfirmOutcome =
  | { accepted: true; externalId: string; externalUrl?: string }
  | { accepted: false; reason: string };

export function createReconciliationActivities({ db, destinations }: { db: LedgerDb; destinations: Destinations }) {
  async function prepare(target: ReadbackTarget) {
    const found = await readRelease(db, target.effectId, target.releaseRevision);
    if (!found)
      throw ApplicationFailure.nonRetryable(
        `release ${target.effectId}#${target.releaseRevision} not found`,
        'ReleaseNotFound',
      );
    const adapter = destinations[found.destination];
    if (!adapter)
      throw ApplicationFailure.nonRetryable(`no adapter for destination ${found.destination}`, 'UnknownDestination');
    const request: ReadbackRequest = {
      effectId: target.effectId,
      idempotencyKey: idempotencyKeyFor(target.effectId, target.step),
      package: found.release.package as ReleasedPackage,
      bodySha256: found.release.bodySha256,
      since: target.since,
    };
    return { adapter, request, destination: found.destination };
  }

  return {
    /** Looks for the exact object; records what it saw and, when found, the fact (confirmed by readback). */
    async readBack(target: ReadbackTarget): Promise<ReadbackResult> {
      const { adapter, request, destination } = await prepare(target);
      const result = await adapter.readBack(request);
      const found = result.outcome === 'found' ? result : undefined;
      await recordEvidence(
        db,
        {
          effectId: target.effectId,
          attemptId: null,
          kind: 'readback',
          outcome: result.outcome,
          coverage: result.coverage,
          externalId: found?.externalId ?? null,
          externalUrl: found?.externalUrl ?? null,
          detail: result.detail,
        },
        found ? 'recorded' : 'unknown',
        found && {
          destination,
          externalId: found.externalId,
          externalUrl: found.externalUrl ?? null,
          occurredAt: found.occurredAt,
          confirmedBy: 'readback',
        },
      );
      return result;
    },

    async recordDecision(decision: DecisionInput, stage?: EffectStage): Promise<void> {
      await recordDecision(db, decision, stage);
    },

    /** A human says the effect happened: check the named object at the destination where possible. */
    async confirmDelivery(
      target: ReadbackTarget,
      decision: Extract<Decision, { kind: 'confirm-delivery' }>,
      requestRef: string,
    ): Promise<ConfirmOutcome> {
      const { adapter, request, destination } = await prepare(target);
      const base: DecisionInput = {
        requestRef,
        effectId: target.effectId,
        kind: 'confirm-delivery',
        actor: decision.actor,
        reason: decision.reason,
        payload: decision,
        accepted: false,
      };
      // parseDecision guarantees an ID or a URL.
      let externalId = decision.externalId ?? decision.externalUrl ?? '';
      let externalUrl = decision.externalUrl;
      let occurredAt = new Date().toISOString();
      let checked = 'not checkable: only a URL was given';
      if (decision.externalId) {
        const seen = await adapter.lookup(decision.externalId, request);
        if (!seen.exists || !seen.matchesRelease) {
          const reason = seen.exists
            ? `object ${decision.externalId} does not carry this effect's reference and released body`
            : `the destination has no object ${decision.externalId}`;
          await recordDecision(db, { ...base, rejectionReason: reason });
          return { accepted: false, reason };
        }
        externalId = seen.externalId;
        externalUrl = decision.externalUrl ?? seen.externalUrl;
        occurredAt = seen.occurredAt;
        checked = 'checked at the destination: exists and matches the release';
      }
      await recordEvidence(
        db,
        {
          effectId: target.effectId,
          attemptId: null,
          kind: 'human',
          outcome: 'found',
          externalId,
          externalUrl: externalUrl ?? null,
          detail: { actor: decision.actor, reason: decision.reason, checked },
        },
        'recorded',
        { destination, externalId, externalUrl: externalUrl ?? null, occurredAt, confirmedBy: 'human' },
      );
      await recordDecision(db, { ...base, accepted: true });
      return { accepted: true, externalId, externalUrl };
    },
  };
}
