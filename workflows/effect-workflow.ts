// One approved business effect, carried from release to a recorded fact. Workflow ID = effect ID.
// Deterministic: no I/O here; the ledger and the destination are reached only through activities.
import {
  ActivityFailure,
  allHandlersFinished,
  condition,
  makeContinueAsNewFunc,
  patched,
  proxyActivities,
  setCurrentDetails,
  setDefaultSignalHandler,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { AttemptRef } from '../activities/effect-activities.js';
import type { EffectActivities } from '../activities/index.js';
import type { ReadbackTarget } from '../activities/reconciliation-activities.js';
import { type Decision, type DecisionKind, parseDecision, type RecordedDecisionKind } from '../domain/decisions.js';
import type { SendOutcome } from '../domain/destination-contract.js';
import { MAIN_STEP } from '../domain/idempotency-key.js';
import { type EffectStage, stageAfterOutcome } from '../domain/stages.js';
import {
  abandonSignal,
  approveRetrySignal,
  confirmDeliverySignal,
  type DecideResponse,
  decideUpdate,
  decideUpdateDescription,
  decisionSignalDescriptions,
  type EffectInput,
  type EffectResult,
  statusQuery,
  statusQueryDescription,
} from './contract.js';
import { EffectView } from './effect-view.js';
import { effectStageKey } from './search-attributes.js';

// Ledger writes and readbacks are idempotent: retry them until they answer.
const ledger = proxyActivities<EffectActivities>({
  startToCloseTimeout: '10 seconds',
  retry: {
    initialInterval: '1 second',
    maximumInterval: '1 minute',
    nonRetryableErrorTypes: ['LedgerInvariantError', 'EffectNotFound', 'ReleaseNotFound', 'UnknownDestination'],
  },
});

/** Automatic same-key retries after proven absence, before a human must decide. */
const MAX_AUTOMATIC_RETRIES = 3;

/** Four hours of waiting per run at the default 10-minute readback interval: about 350 history events. */
const DEFAULT_READBACKS_PER_RUN = 24;

// v2: a long wait for a human continues as new. A v1 run replays its past without it (no marker in its
// history) and hands over at its next live check.
export const CONTINUE_AS_NEW_PATCH = 'continue-as-new-while-awaiting-human';

/** A pause that grows to a minute, for "not sent" retries and automatic retries after absence. */
function backoffMs(n: number, retryAfterMs?: number): number {
  return retryAfterMs ?? Math.min(60_000, 1000 * 2 ** Math.min(n - 1, 6));
}

interface QueuedDecision {
  ref: string;
  decision: Decision;
  answer?: (response: DecideResponse) => void;
}

export async function effectWorkflow(input: EffectInput): Promise<EffectResult> {
  const view = new EffectView(input);
  const queue: QueuedDecision[] = [];
  let decisionSeq = 0;
  const nextRef = () => `${workflowInfo().runId}:${++decisionSeq}`;

  const publish = () => {
    upsertSearchAttributes([{ key: effectStageKey, value: view.stage }]);
    setCurrentDetails(view.details());
  };
  const move = (to: EffectStage, awaiting?: string) => {
    view.move(to, awaiting);
    publish();
  };
  const result = (reason?: string): EffectResult => {
    const s = view.status();
    return { effectId: s.effectId, stage: s.stage, externalId: s.externalId, externalUrl: s.externalUrl, reason };
  };

  /** Records a decision that changes nothing, with why. */
  const refuse = async (kind: RecordedDecisionKind, actor: string, payload: unknown, why: string) => {
    view.addDecision({ kind, actor, accepted: false, note: why });
    publish();
    await ledger.recordDecision({
      requestRef: nextRef(),
      effectId: input.effectId,
      kind,
      actor,
      reason: '',
      payload,
      accepted: false,
      rejectionReason: why,
    });
  };

  const onDecision = (kind: DecisionKind) => async (payload: unknown) => {
    const parsed = parseDecision(kind, payload);
    if (!parsed.ok) return refuse(kind, parsed.actor, payload, parsed.error);
    if (view.stage !== 'unknown')
      return refuse(kind, parsed.decision.actor, payload, `not awaiting a decision: the effect is ${view.stage}`);
    queue.push({ ref: nextRef(), decision: parsed.decision });
  };
  // A signal name we do not know (a typo in the UI) is answered in the ledger too, never silently dropped.
  setDefaultSignalHandler((name, ...args) =>
    refuse(
      'unrecognised',
      '',
      args[0] ?? null,
      `unknown signal ${JSON.stringify(name)}; use approve-retry, confirm-delivery or abandon`,
    ),
  );
  setHandler(statusQuery, () => view.status(), { description: statusQueryDescription });
  setHandler(approveRetrySignal, onDecision('approve-retry'), {
    description: decisionSignalDescriptions['approve-retry'],
  });
  setHandler(confirmDeliverySignal, onDecision('confirm-delivery'), {
    description: decisionSignalDescriptions['confirm-delivery'],
  });
  setHandler(abandonSignal, onDecision('abandon'), { description: decisionSignalDescriptions.abandon });
  setHandler(
    decideUpdate,
    async ({ decision: kind, ...payload }) => {
      const parsed = parseDecision(kind, payload);
      if (!parsed.ok) throw new Error(parsed.error); // the validator already refused it
      return new Promise<DecideResponse>((answer) => queue.push({ ref: nextRef(), decision: parsed.decision, answer }));
    },
    {
      description: decideUpdateDescription,
      validator: ({ decision: kind, ...payload }) => {
        const parsed = parseDecision(kind, payload);
        if (!parsed.ok) throw new Error(parsed.error);
        if (view.stage !== 'unknown') throw new Error(`not awaiting a decision: the effect is ${view.stage}`);
      },
    },
  );

  // One attempt per execution: after the request may have left, only evidence decides what happens next.
  const destination = proxyActivities<EffectActivities>({
    startToCloseTimeout: input.callTimeoutMs + 5000,
    retry: { maximumAttempts: 1 },
  });
  const send = async (attempt: AttemptRef, revision: number): Promise<SendOutcome> => {
    try {
      return await destination.sendToDestination(attempt, revision, input.callTimeoutMs);
    } catch (error) {
      // The activity timed out or its worker died mid-call: the request may have left.
      if (error instanceof ActivityFailure) {
        return {
          class: 'unknown',
          detail: { reason: `provider call did not finish: ${error.cause?.message ?? error.message}` },
        };
      }
      throw error;
    }
  };

  const finish = async (outcome: EffectResult): Promise<EffectResult> => {
    // Decisions that arrived but were never acted on are answered, not dropped.
    for (const item of queue.splice(0)) {
      const why = `superseded: the effect is ${view.stage}`;
      await refuse(item.decision.kind, item.decision.actor, item.decision, why);
      item.answer?.({ accepted: false, stage: view.stage, reason: why });
    }
    await condition(allHandlersFinished);
    return outcome;
  };

  publish();
  const release = await ledger.releaseEffect(input.effectId, MAIN_STEP);
  if (release.fact) {
    view.setResult(release.fact.externalId, release.fact.externalUrl);
    move('recorded');
    return finish(result('the ledger already held this effect’s fact'));
  }
  if (!input.carried) move('released');

  let attemptNumber = release.attemptsSoFar;
  let firstAttemptAt = release.firstAttemptStartedAt;
  let automaticRetries = input.carried?.automaticRetries ?? 0;
  let readbacksThisRun = 0;
  const target = (): ReadbackTarget => ({
    effectId: input.effectId,
    step: MAIN_STEP,
    releaseRevision: release.revision,
    since: firstAttemptAt ?? '',
  });

  /** A run's history must stay far from Temporal's limits (51,200 events) however long a human takes. */
  const longWait = () =>
    readbacksThisRun >= (input.readbacksPerRun ?? DEFAULT_READBACKS_PER_RUN) || workflowInfo().continueAsNewSuggested;
  const handOver = (): Promise<never> =>
    makeContinueAsNewFunc<typeof effectWorkflow>({ typedSearchAttributes: workflowInfo().typedSearchAttributes })({
      ...input,
      carried: view.carry(automaticRetries),
    });

  /**
   * UNKNOWN: automatic retries are frozen. Read back first; retry with the same key only where the
   * destination's contract allows it after proven absence; otherwise wait for a human, reading back
   * again on a schedule so a late object is still found.
   */
  const reconcile = async (): Promise<'retry' | EffectResult> => {
    for (;;) {
      view.await('readback: looking for the exact object at the destination');
      publish();
      const readback = await ledger.readBack(target());
      readbacksThisRun += 1;
      view.addReadback({
        at: new Date().toISOString(),
        outcome: readback.outcome,
        coverage: readback.coverage,
        method: readback.detail.method,
        reason: readback.detail.reason,
      });
      if (readback.outcome === 'found') {
        view.setResult(readback.externalId, readback.externalUrl);
        move('reconciled');
        move('recorded');
        return result();
      }
      if (
        readback.outcome === 'absent' &&
        input.retryAfterProvenAbsence &&
        automaticRetries < MAX_AUTOMATIC_RETRIES &&
        queue.length === 0
      ) {
        automaticRetries += 1;
        view.await(
          `retry with the same key: readback proved absence (automatic retry ${automaticRetries} of ${MAX_AUTOMATIC_RETRIES})`,
        );
        publish();
        await sleep(backoffMs(automaticRetries));
        return 'retry';
      }
      view.await(
        `a human decision (signal approve-retry, confirm-delivery or abandon): readback was ${readback.outcome}` +
          ` (${readback.detail.reason}); reading back again every ${Math.round(input.readbackIntervalMs / 1000)} s`,
      );
      publish();
      if (!(await condition(() => queue.length > 0, input.readbackIntervalMs))) {
        if (!(longWait() && patched(CONTINUE_AS_NEW_PATCH))) continue;
        // Hand over only between decisions: one that arrives meanwhile is decided in this run.
        await condition(() => queue.length > 0 || allHandlersFinished());
        if (queue.length === 0) return handOver();
      }
      const next = queue.shift();
      if (!next) continue;
      const { ref, decision, answer } = next;
      const respond = (accepted: boolean, reason?: string) => answer?.({ accepted, stage: view.stage, reason });
      switch (decision.kind) {
        case 'approve-retry':
          await ledger.recordDecision({
            requestRef: ref,
            effectId: input.effectId,
            ...decision,
            payload: decision,
            accepted: true,
          });
          view.addDecision({ kind: decision.kind, actor: decision.actor, accepted: true, note: decision.reason });
          respond(true);
          return 'retry';
        case 'abandon':
          await ledger.recordDecision(
            { requestRef: ref, effectId: input.effectId, ...decision, payload: decision, accepted: true },
            'abandoned',
          );
          view.addDecision({ kind: decision.kind, actor: decision.actor, accepted: true, note: decision.reason });
          move('abandoned');
          respond(true);
          return result(`abandoned by ${decision.actor}: ${decision.reason}`);
        case 'confirm-delivery': {
          const confirmed = await ledger.confirmDelivery(target(), decision, ref);
          view.addDecision({
            kind: decision.kind,
            actor: decision.actor,
            accepted: confirmed.accepted,
            note: confirmed.accepted ? decision.reason : confirmed.reason,
          });
          if (!confirmed.accepted) {
            publish();
            respond(false, confirmed.reason);
            continue;
          }
          view.setResult(confirmed.externalId, confirmed.externalUrl);
          move('recorded');
          respond(true);
          return result(`confirmed by ${decision.actor}`);
        }
      }
    }
  };

  if (attemptNumber > 0) {
    // An earlier run started attempts and left no outcome we trust: never a blind second write.
    if (!input.carried) {
      move('attempted');
      move('unknown');
    }
    const next = await reconcile();
    if (next !== 'retry') return finish(next);
  }

  for (;;) {
    attemptNumber += 1;
    const attempt = await ledger.recordAttempt(input.effectId, MAIN_STEP, attemptNumber, release.revision);
    firstAttemptAt ??= attempt.startedAt;
    view.addAttempt(attempt);
    move('attempted', `the provider's answer to attempt ${attemptNumber}`);

    const outcome = await send(attempt, release.revision);
    const next = stageAfterOutcome(outcome.class);
    await ledger.recordResponse(attempt, input.destination, outcome, next);
    view.settleAttempt(attemptNumber, outcome.class, outcome.detail.reason);

    switch (outcome.class) {
      case 'confirmed':
        view.setResult(outcome.externalId, outcome.externalUrl);
        move('recorded');
        return finish(result());
      case 'rejected':
        move('rejected');
        return finish(result(outcome.detail.reason));
      case 'unknown': {
        move('unknown');
        const resolved = await reconcile();
        if (resolved !== 'retry') return finish(resolved);
        break;
      }
      case 'not_sent': {
        const pause = backoffMs(attemptNumber, outcome.retryAfterMs);
        view.await(`retry with the same key in ${Math.round(pause / 1000)} s (not sent: ${outcome.detail.reason})`);
        publish();
        await sleep(pause);
      }
    }
  }
}
