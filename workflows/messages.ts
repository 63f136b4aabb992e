// The effect's messages: the status query, the three decision signals an operator sends from the Web
// UI, the `decide` update, look-now, and a catch-all for misspelt signal names. Decisions are validated here and
// queued; the reconcile phase acts on them. Garbage is recorded in the ledger as refused.
import { currentUpdateInfo, log, setDefaultSignalHandler, setHandler } from '@temporalio/workflow';
import { type DecisionKind, parseDecision } from '../domain/decisions.js';
import {
  abandonSignal,
  approveRetrySignal,
  confirmDeliverySignal,
  type DecideResponse,
  decideUpdate,
  decideUpdateDescription,
  decisionSignalDescriptions,
  lookNowSignal,
  lookNowSignalDescription,
  revisionReleasedSignal,
  revisionReleasedSignalDescription,
  statusQuery,
  statusQueryDescription,
} from './contract.js';
import type { EffectRun, QueuedDecision } from './effect-run.js';

/** Why a decision cannot be taken now, or undefined: UNKNOWN takes any; a pause with nothing in flight, an abandon. */
function notAwaiting(run: EffectRun, kind: DecisionKind): string | undefined {
  if (run.stage === 'unknown') return undefined;
  if (run.pause && kind === 'abandon' && run.decisions.length === 0) return undefined;
  return `not awaiting a decision: the effect is ${run.stage}`;
}

/** What a decision arriving now answers: the episode, and the step and revision being carried. */
function arrivedNow(run: EffectRun): Pick<QueuedDecision, 'episode' | 'step' | 'revision'> {
  return { episode: run.episode, step: run.step, revision: run.releaseRevision };
}

export function handleMessages(run: EffectRun): void {
  const onDecision = (kind: DecisionKind) => async (payload: unknown) => {
    const parsed = parseDecision(kind, payload);
    if (!parsed.ok) return run.refuse(kind, parsed.actor, payload, parsed.error);
    const refusal = notAwaiting(run, kind);
    if (refusal) return run.refuse(kind, parsed.decision.actor, payload, refusal);
    run.decisions.push({ ref: run.nextRef(), ...arrivedNow(run), decision: parsed.decision });
  };
  // The client's word that a person revised the refused effect: the run checks the ledger before it trusts it.
  setHandler(
    revisionReleasedSignal,
    () => {
      run.revisionSignals += 1;
    },
    { description: revisionReleasedSignalDescription },
  );

  // The provider is back: the waiting look is taken now. Nothing is decided, so nothing is recorded but the look.
  setHandler(
    lookNowSignal,
    (payload: unknown) => {
      const by = (payload as { actor?: unknown } | null)?.actor;
      if (run.stage !== 'unknown') {
        log.info('look-now ignored: the effect is not waiting in UNKNOWN', { stage: run.stage, by });
        return;
      }
      run.lookNowAsked = true;
    },
    { description: lookNowSignalDescription },
  );

  setHandler(statusQuery, () => run.view.status(), { description: statusQueryDescription });
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
      // The update's ID names the decision: a caller re-sending it after a timeout makes one decision.
      const updateId = currentUpdateInfo()?.id;
      const ref = updateId ? `update:${updateId}` : run.nextRef();
      return new Promise<DecideResponse>((answer) =>
        run.decisions.push({ ref, ...arrivedNow(run), decision: parsed.decision, answer }),
      );
    },
    {
      description: decideUpdateDescription,
      validator: ({ decision: kind, ...payload }) => {
        const parsed = parseDecision(kind, payload);
        if (!parsed.ok) throw new Error(parsed.error);
        const refusal = notAwaiting(run, kind);
        if (refusal) throw new Error(refusal);
      },
    },
  );
  // A signal name we do not know (a typo in the UI) is answered in the ledger too, never silently dropped. Registered
  // last: a default handler set first takes the signals buffered for a new run (a decision sent across a hand-over)
  // before their own handlers exist, and refuses them as unknown.
  setDefaultSignalHandler((name, ...args) =>
    run.refuse(
      'unrecognised',
      '',
      args[0] ?? null,
      `unknown signal ${JSON.stringify(name)}; use approve-retry, confirm-delivery or abandon`,
    ),
  );
}
