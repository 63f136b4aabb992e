// Activities of an effect frozen in UNKNOWN: readback (reads only, never writes to the destination),
// human decisions, and checking a human's evidence against the destination.
import { ApplicationFailure, CancelledFailure, Context, log } from '@temporalio/activity';
import { ApplicationFailureCategory } from '@temporalio/common';
import { deadlineSignal } from '../domain/deadline-signal.js';
import type { Decision } from '../domain/decisions.js';
import type {
  DestinationContract,
  ReadbackRequest,
  ReadbackResult,
  ReleasedPackage,
} from '../domain/destination-contract.js';
import { type EffectStage, stageAfterStepFound } from '../domain/stages.js';
import type { LedgerDb } from '../ledger/db.js';
import {
  type DecisionInput,
  type DecisionTaken,
  readDecision,
  recordDecision,
  recordEvidence,
} from '../ledger/progress.js';
import { type InFlightClock, inFlightClock, readEffect, readRelease } from '../ledger/trail.js';
import { SEND_START_LIMIT_MS } from './attempt-activities.js';
import { checkedReadback, readbackErrorVerdict } from './crossing-checks.js';
import { requireHosted } from './destination-hosting.js';
import { ProviderRateLimitedError } from './destinations/http-read.js';
import type { Destinations } from './destinations/registry.js';
import { type EffectMetrics, NO_METRICS } from './effect-metrics.js';
import { lookupSpan, markActivity, readbackSpan, stepAttributes, verdictAttributes } from './provider-spans.js';
import { quietHeartbeat } from './quiet-heartbeat.js';
import { readbackTurns } from './readback-turns.js';

export interface ReadbackTarget {
  effectId: string;
  step: string;
  releaseRevision: number;
  /** When the first attempt started: the object cannot be older. */
  since: string;
  /** The run's call timeout and absence grace, when they differ from the destination's (tests shorten them). */
  callTimeoutMs?: number;
  absenceGraceMs?: number;
  /** False for a step of a multi-step effect before its last: found, it leaves the effect reconciled. */
  lastStep?: boolean;
}

/**
 * A provider's 429 during readback is never a verdict: the activity is retried after the provider's Retry-After
 * (the retry policy's own backoff would ignore it). Recognised by shape too, for an adapter's own error class.
 */
function rateLimitedRetry(error: unknown): ApplicationFailure | undefined {
  const retryAfterMs = (error as { retryAfterMs?: unknown } | null)?.retryAfterMs;
  if (
    !(error instanceof ProviderRateLimitedError) &&
    !((error as Error | null)?.name === 'ProviderRateLimitedError' && typeof retryAfterMs === 'number')
  )
    return undefined;
  const delay = Math.max(1000, Math.min(Number(retryAfterMs), 3_600_000));
  return ApplicationFailure.create({
    type: 'ProviderRateLimited',
    message: `${(error as Error).message}: reading back again in ${delay} ms`,
    nextRetryDelay: delay,
    cause: error as Error,
    // A provider asking us to slow down is expected, not a failure: DEBUG, not WARN, and no failure metric.
    category: ApplicationFailureCategory.BENIGN,
  });
}

export type ConfirmOutcome =
  | { accepted: true; externalId: string; externalUrl?: string }
  /** `taken`: the decision ID was decided before, by another run (sent again after a continue-as-new): nothing checked or written. */
  | { accepted: false; reason: string; taken?: DecisionTaken };

export function createReconciliationActivities({
  db,
  destinations,
  metrics = NO_METRICS,
}: {
  db: LedgerDb;
  destinations: Destinations;
  metrics?: EffectMetrics;
}) {
  /** The run deciding: its own retried write is not a repeat of its decision. */
  const deciderRun = () => Context.current().info.workflowExecution?.runId ?? null;

  /** Records a decision (first under its reference, or what was decided then) and counts a new one. */
  async function decided(decision: DecisionInput, stage?: EffectStage): Promise<DecisionTaken> {
    const taken = await recordDecision(db, { ...decision, workflowRunId: deciderRun() }, stage);
    if (!taken.first) {
      log.info('decision already taken', { effectId: decision.effectId, decision: decision.kind });
      return taken;
    }
    const effect = await readEffect(db, decision.effectId);
    metrics.decision(effect?.destination ?? 'unknown', decision.kind, decision.accepted);
    log.info('decision recorded', {
      effectId: decision.effectId,
      decision: decision.kind,
      accepted: decision.accepted,
      actor: decision.actor,
    });
    return taken;
  }

  async function prepare(target: ReadbackTarget) {
    const found = await readRelease(db, target.effectId, target.releaseRevision, target.step);
    if (!found)
      throw ApplicationFailure.nonRetryable(
        `release ${target.effectId}#${target.releaseRevision} step ${target.step} not found`,
        'ReleaseNotFound',
      );
    // Not hosted here: retried (by Temporal) until a worker that hosts the destination takes it.
    const adapter = requireHosted(destinations, found.destination);
    // A step's object carries the step's own reference, its released key: the effect ID for main, effectID~step
    // for another, with `#r<n>` in a revision of a revision-scoped destination (client/effect-request.ts).
    const reference = found.release.idempotencyKey;
    const request: ReadbackRequest = {
      effectId: reference,
      idempotencyKey: reference,
      package: found.release.package as ReleasedPackage,
      bodySha256: found.release.bodySha256,
      since: target.since,
    };
    return { adapter, request, destination: found.destination };
  }

  /**
   * "Absent" is no proof while our last request may still be processed: until its call timeout after it began to
   * leave, plus the destination's grace, the verdict is inconclusive, with the time it becomes decidable (an
   * inconclusive read says that time too, so an abandon waits it out). It began
   * when its recorded answer says (`sendBeganAfterMs` after its attempt row), at the latest SEND_START_LIMIT_MS
   * after the row (a send begins then or not at all). Judged on the database's clock (the one that stamped the
   * attempt) at the moment the read began: a read that began inside the window proves nothing, however late it
   * finished, and a worker whose clock runs ahead shortens no grace.
   */
  function withheldWhileInFlight(
    read: ReadbackResult,
    target: ReadbackTarget,
    adapter: DestinationContract,
    clock: InFlightClock,
  ): ReadbackResult {
    const last = clock.lastStartedAt;
    if (read.outcome === 'found' || !last) return read;
    const sent = last.getTime() + (clock.sendBeganAfterMs ?? SEND_START_LIMIT_MS);
    const window = (target.callTimeoutMs ?? adapter.callTimeoutMs) + (target.absenceGraceMs ?? adapter.absenceGraceMs);
    const until = new Date(sent + window);
    const began = clock.now;
    if (until.getTime() <= began.getTime()) return read;
    // Inconclusive anyway: it says until when, so an abandon (and the next readback) waits the window out.
    if (read.outcome === 'inconclusive')
      return { ...read, detail: { ...read.detail, inFlightUntil: until.toISOString() } };
    return {
      outcome: 'inconclusive',
      coverage: 'partial',
      detail: {
        ...read.detail,
        reason: `nothing found by a read that began at ${began.toISOString()}, but our last request (started ${last.toISOString()}) may still be processed until ${until.toISOString()}`,
        inFlightUntil: until.toISOString(),
      },
    };
  }

  return {
    /** Looks for the exact object; records what it saw and, when found, the fact (confirmed by readback). */
    async readBack(target: ReadbackTarget): Promise<ReadbackResult> {
      const coordinates = { ...target, revision: target.releaseRevision };
      markActivity(stepAttributes(coordinates));
      const { adapter, request, destination } = await prepare(target);
      const context = Context.current();
      const keepAlive = quietHeartbeat(context);
      // Asked before the read begins: what the read can prove depends on when it began, by the ledger's clock.
      const clock = await inFlightClock(db, target.effectId, target.step);
      // The destination's declared rate holds for its readback requests from every worker together.
      const turns = readbackTurns(
        db,
        destination,
        adapter.readbackRatePerSecond,
        () => metrics.readbackPaced?.(destination),
        keepAlive,
      );
      await turns.first();
      // Fires at the activity's deadline as well as at its cancellation: no read outlives the readback.
      const readDeadline = deadlineSignal(
        Math.max(1, context.info.startToCloseTimeoutMs - 500),
        context.cancellationSignal,
      );
      const read = await readbackSpan({ ...coordinates, destination }, () =>
        adapter.readBack({
          ...request,
          signal: readDeadline.signal,
          onPage: keepAlive,
          beforeRequest: turns.beforeRequest,
        }),
      )
        .finally(readDeadline.clear)
        .then(checkedReadback)
        .catch((error: unknown) => {
          // An answer the adapter cannot read as declared is read the same way next time: no retry, a verdict.
          const unreadable = readbackErrorVerdict(error);
          if (unreadable) return unreadable;
          throw rateLimitedRetry(error) ?? error;
        });
      const result = withheldWhileInFlight(read, target, adapter, clock);
      markActivity(verdictAttributes(result));
      // Cancelled or past its deadline (the workflow has moved on): a zombie never writes evidence.
      if (context.cancellationSignal.aborted) throw new CancelledFailure('readback cancelled before recording');
      const found = result.outcome === 'found' ? result : undefined;
      await recordEvidence(
        db,
        {
          effectId: target.effectId,
          step: target.step,
          attemptId: null,
          kind: 'readback',
          outcome: result.outcome,
          coverage: result.coverage,
          externalId: found?.externalId ?? null,
          externalUrl: found?.externalUrl ?? null,
          // When the read began, by the ledger's clock, and what it looked for: what an "absent" can prove, and
          // what the chaos run's checker holds against the destination's objects (absent_beside_object).
          detail: { ...result.detail, readBegan: clock.now.toISOString(), reference: request.idempotencyKey },
        },
        found ? stageAfterStepFound(target.lastStep) : 'unknown',
        found && {
          destination,
          externalId: found.externalId,
          externalUrl: found.externalUrl ?? null,
          occurredAt: found.occurredAt,
          confirmedBy: 'readback',
        },
      );
      metrics.readback(destination, result.outcome);
      log.info('readback recorded', {
        effectId: target.effectId,
        destination,
        verdict: result.outcome,
        coverage: result.coverage,
      });
      return result;
    },

    /** A decision, once: `first` is false when another run took one under this reference (nothing written). */
    async recordDecision(decision: DecisionInput, stage?: EffectStage): Promise<DecisionTaken> {
      return decided(decision, stage);
    },

    /**
     * A human says the effect happened, naming the object by ID and/or URL. A URL is resolved to the object
     * it names (the adapter knows its URL shapes); the object is then checked like one named by ID: it must
     * exist and carry this effect's reference and released body. The fact records the provider's own ID
     * and canonical URL, never the text typed. Anything that does not check out is refused, with why.
     */
    async confirmDelivery(
      target: ReadbackTarget,
      decision: Extract<Decision, { kind: 'confirm-delivery' }>,
      requestRef: string,
    ): Promise<ConfirmOutcome> {
      // A decision ID an earlier run took (sent again after a continue-as-new) is that decision: not checked again.
      const earlier = await readDecision(db, target.effectId, requestRef);
      if (earlier && earlier.workflowRunId !== deciderRun())
        return {
          accepted: false,
          reason: 'already decided',
          taken: { first: false, accepted: earlier.accepted, rejectionReason: earlier.rejectionReason },
        };
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
      const refuse = async (reason: string): Promise<ConfirmOutcome> => {
        await decided({ ...base, rejectionReason: reason });
        return { accepted: false, reason };
      };
      let named = decision.externalId;
      if (decision.externalUrl !== undefined) {
        const fromUrl = adapter.resolveUrl(decision.externalUrl);
        if (fromUrl === null)
          return refuse(
            `the URL ${decision.externalUrl} does not name a ${destination} object (its object URLs look like ${adapter.objectUrlShape}); give the externalId or the object's URL`,
          );
        if (named !== undefined && named !== fromUrl)
          return refuse(`the URL names object ${fromUrl} but externalId says ${named}`);
        named = fromUrl;
      }
      // parseDecision guarantees an ID or a URL.
      if (named === undefined) return refuse('confirm-delivery needs evidence: externalId and/or externalUrl');
      const seen = await lookupSpan({ ...target, revision: target.releaseRevision, destination }, () =>
        adapter.lookup(named, request),
      );
      if (!seen.exists) return refuse(`the destination has no object ${named}`);
      if (seen.externalId !== named) return refuse(`the destination answered object ${seen.externalId} for ${named}`);
      if (!seen.matchesRelease)
        return refuse(`object ${named} does not carry this effect's reference and released body`);
      const { externalId, externalUrl, occurredAt } = seen;
      await recordEvidence(
        db,
        {
          effectId: target.effectId,
          step: target.step,
          attemptId: null,
          kind: 'human',
          outcome: 'found',
          externalId,
          externalUrl: externalUrl ?? null,
          detail: {
            actor: decision.actor,
            reason: decision.reason,
            checked: 'checked at the destination: exists and matches the release',
            ...(decision.externalUrl !== undefined ? { typedUrl: decision.externalUrl } : {}),
          },
        },
        stageAfterStepFound(target.lastStep),
        { destination, externalId, externalUrl: externalUrl ?? null, occurredAt, confirmedBy: 'human' },
      );
      await decided({ ...base, accepted: true });
      return { accepted: true, externalId, externalUrl };
    },
  };
}
