// The backend API: what a service imports to approve effects and look at them.
//
//   const effects = new EffectLedgerClient({ client, db, taskQueue });
//   await effects.approve({ effectId: 'refund:A-1', destination: 'keyed-api', operation: 'refund.create',
//                           payload: {...}, approvedBy: 'ana@example.com', authorizationRef: 'TICKET-9' });
//
// Approval is idempotent: the same effect ID with the same fingerprint returns the existing effect
// (open or closed run) and causes no new attempt; with another fingerprint it throws
// EffectConflictError before any provider is touched. The ledger, not Temporal's retention, is the
// lasting record of which effect IDs exist.
import { randomUUID } from 'node:crypto';
import type { Tracer } from '@opentelemetry/api';
import {
  type Client,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  type WorkflowSignalWithStartOptions,
  type WorkflowStartOptions,
} from '@temporalio/client';
import type { WithWorkflowArgs } from '@temporalio/common';
import { builtInContracts } from '../activities/destinations/built-in-contracts.js';
import type { DecisionKind } from '../domain/decisions.js';
import { catalogOf, contractIn, type DestinationCatalog, type KnownDestination } from '../domain/destination.js';
import { type EffectStage, isTerminal } from '../domain/stages.js';
import type { LedgerDb } from '../ledger/db.js';
import { EffectNotFoundError, EffectNotRunningError, RevisionRefusedError } from '../ledger/errors.js';
import { effectFingerprint } from '../ledger/fingerprint.js';
import { type EffectRow, registerEffect } from '../ledger/registration.js';
import { readRevisions, recordRevision } from '../ledger/revision.js';
import { listStartFailures, readStartFailure } from '../ledger/start-failures.js';
import {
  type EffectTrail,
  listEffectsByStage,
  readEffect,
  readFact,
  readReleasedSteps,
  readTrail,
} from '../ledger/trail.js';
import {
  type DecideResponse,
  decideUpdate,
  EFFECT_WORKFLOW_TYPE,
  type EffectInput,
  type EffectResult,
  type EffectStatus,
  LOOK_ACTIVITY,
  lookNowSignal,
  revisionReleasedSignal,
  type StepInput,
  statusQuery,
} from '../workflows/contract.js';
import type { effectWorkflow } from '../workflows/effect-workflow.js';
import {
  effectDestinationKey,
  effectOperationKey,
  effectStageKey,
  effectSummaryKey,
} from '../workflows/search-attributes.js';
import { approvalRecords, validateEffectRequest } from './effect-request.js';
import { planRevision, type RevisionRequest } from './effect-revision.js';
import { type ReconcilerPassOptions, type ReconcilerPassReport, runReconcilerPass } from './reconciler-pass.js';
import { keywordValue, staticSummaryText } from './temporal-limits.js';
import { approveSpan, effectTracer } from './tracing.js';

export interface EffectLedgerClientOptions {
  client: Client;
  db: LedgerDb;
  taskQueue: string;
  /** Overrides every destination's call timeout (tests make UNKNOWN happen quickly). */
  callTimeoutMs?: number;
  /** How often an effect awaiting a human is read back again (default 10 minutes). */
  readbackIntervalMs?: number;
  /**
   * Times a run wakes while it waits (a verdict that changed, a decision, a look-now) before it continues as new
   * (workflow v7, default 50; its looks are not wakes). Runs on v6 counted their readbacks here (default 24).
   */
  readbacksPerRun?: number;
  /** Overrides every destination's readback cap while a person is awaited (tests keep readbacks frequent). */
  readbackMaxIntervalMs?: number;
  /** Overrides every destination's absence grace (tests that do not exercise it set 0). */
  absenceGraceMs?: number;
  /** Unfinished effects the ledger reconciler reads per page (default 500; docs/reconciler.md). */
  reconcilerPageSize?: number;
  /**
   * The destinations approvals may name, as destinations or bare contracts (default: the built-ins). Every
   * approval, revision and run is validated against these; a worker hosts the adapters.
   */
  destinations?: readonly KnownDestination[];
  /** The tracer approve's span is made with (default: effect-ledger's, on the process's tracer provider). */
  tracer?: Tracer;
  /**
   * Attempts run as local activities on the workflow's own worker (workflow v8): the happy path in 7 history events
   * and one workflow task, at a bare workflow's price (docs/price-and-bench.md). Default false: a regular activity,
   * shown as the pending activity while it runs (a status query meanwhile answers at once).
   */
  localAttempts?: boolean;
}

const DEFAULT_READBACK_INTERVAL_MS = 10 * 60 * 1000;

export interface ApprovalResult {
  effectId: string;
  /** False when the effect ID was already approved with the same fingerprint. */
  created: boolean;
  stage: EffectStage;
  fact: { externalId: string; externalUrl: string | null } | null;
}

export interface RevisionResult {
  effectId: string;
  revision: number;
  /** False when this revision (the same payload) was already taken: a repeat after a timeout, say. */
  created: boolean;
  stage: EffectStage;
}

export interface EffectReport {
  trail: EffectTrail;
  /** The running workflow's own view; null once it has closed, its history has expired, or it did not answer. */
  live: EffectStatus | null;
  /** Set when the live view could not be had in time (Temporal unreachable, no worker polling): what was not seen. */
  liveUnavailable?: string;
  /**
   * Activities of the running workflow that Temporal is retrying, with their last failure: a readback on a worker
   * that does not host the destination, say. Absent when none is retrying.
   */
  retrying?: RetryingActivity[];
}

export interface RetryingActivity {
  activity: string;
  attempt: number;
  lastFailure: string;
  /** The worker that failed it last. */
  worker?: string;
}

/**
 * How an effect's run is started, with the options this client made: through this client, or through the Nexus
 * `approve` operation, which links its caller to the run (workers/nexus-service.ts). R is what a start returns.
 */
export interface EffectRunStarter<R> {
  /** Starts the run, or joins the open one (the options say `workflowIdConflictPolicy: 'USE_EXISTING'`). */
  start(options: WorkflowStartOptions<typeof effectWorkflow>): Promise<R>;
  /** A revised effect's: signals the open run (an older revision's hands over to this one), or starts one. */
  signalWithStart(
    options: WithWorkflowArgs<typeof effectWorkflow, WorkflowSignalWithStartOptions<[unknown]>>,
  ): Promise<R>;
}

/** How long `status` waits for Temporal before answering from the ledger alone. */
const LIVE_VIEW_DEADLINE_MS = 3000;

export class EffectLedgerClient {
  /** What approvals are validated against: the contracts of the destinations this client was given. */
  readonly destinations: DestinationCatalog;

  constructor(private readonly options: EffectLedgerClientOptions) {
    this.destinations = catalogOf(options.destinations ?? builtInContracts);
  }

  /** Runs started by this client itself. */
  private readonly starter: EffectRunStarter<void> = {
    start: async (options) => {
      try {
        await this.options.client.workflow.start<typeof effectWorkflow>(EFFECT_WORKFLOW_TYPE, options);
      } catch (error) {
        // Started by someone else between our look and our start: that run carries the effect.
        if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
      }
    },
    signalWithStart: async (options) => {
      await this.options.client.workflow.signalWithStart(EFFECT_WORKFLOW_TYPE, options);
    },
  };

  /** The Temporal client runs are started and read through. */
  get temporal(): Client {
    return this.options.client;
  }

  /** Approves an effect; a span (docs/tracing.md) whose trace the effect's workflow and activities continue. */
  approve(request: unknown): Promise<ApprovalResult> {
    return approveSpan(
      this.options.tracer ?? effectTracer(),
      request,
      async () => (await this.approveThrough(request, this.starter)).approval,
    );
  }

  /**
   * Approval, its run started through `starter` (the Nexus `approve` operation's links its caller to the run):
   * the request validated against the destination's contract, the ledger row (effect and release, one statement),
   * then the run. `run` is what the starter returned; null when the effect had already ended (no run is started).
   */
  async approveThrough<R>(
    request: unknown,
    starter: EffectRunStarter<R>,
  ): Promise<{ approval: ApprovalResult; run: R | null }> {
    const { registration, release } = approvalRecords(
      validateEffectRequest(request, this.destinations),
      this.destinations,
    );
    const { effect, created } = await registerEffect(this.options.db, registration, release);
    const { effectId } = effect;
    const stage = effect.stage as EffectStage;
    if (isTerminal(stage))
      return { approval: { effectId, created, stage, fact: await this.fact(effectId) }, run: null };

    // The same fingerprint means the same plan: the steps approval computed are the ones released (for revision
    // 1; a revised effect's run reads its latest release's steps and keys from the ledger).
    const run = await this.startRun(effect, starter, effect.revision > 1 ? undefined : release.steps);
    // The stage as registration read it: not terminal, so no fact existed at that moment.
    return { approval: { effectId, created, stage, fact: null }, run };
  }

  /**
   * A person's new revision of a refused effect (README, "Revisions"): the payload approved in place of the
   * refused one, under the same effect ID, as release revision n+1. The ledger takes it only from `rejected`
   * and keeps every revision; then a new run of the same workflow ID sends it. Refused (typed, nothing
   * written): RevisionRefusedError (not rejected, intent changed, a settled step changed),
   * InvalidEffectRequestError (a payload an approval would refuse), EffectNotFoundError. The same revision
   * submitted again is answered as taken (`created: false`), and its run started if it has none.
   */
  async revise(effectId: string, request: RevisionRequest): Promise<RevisionResult> {
    const { db } = this.options;
    const trail = await readTrail(db, effectId);
    if (!trail) throw new EffectNotFoundError(effectId);
    const fingerprint = fingerprintOf(trail.effect, request);
    const taken = async (): Promise<RevisionResult | null> => {
      const effect = await readEffect(db, effectId);
      const latest = (await readRevisions(db, effectId)).at(-1);
      if (!effect || !latest || latest.revision !== effect.revision || latest.fingerprint !== fingerprint) return null;
      const stage = effect.stage as EffectStage;
      if (!isTerminal(stage)) await this.startRun(effect, this.starter);
      return { effectId, revision: effect.revision, created: false, stage };
    };
    const refused = (stage: string) =>
      new RevisionRefusedError(effectId, 'not_rejected', `it is ${stage}; only a rejected effect takes a revision`);
    if (trail.effect.stage !== 'rejected') {
      const same = await taken();
      if (same) return same;
      throw refused(trail.effect.stage);
    }
    const record = planRevision(trail, request, this.destinations);
    try {
      await recordRevision(db, record);
    } catch (error) {
      // Another revision won the effect meanwhile (the database decided): this one is refused, or was the same.
      const now = await readEffect(db, effectId);
      if (!now || now.stage === 'rejected') throw error;
      const same = await taken();
      if (same) return same;
      throw refused(now.stage);
    }
    const effect = await readEffect(db, effectId);
    if (!effect) throw new EffectNotFoundError(effectId);
    await this.startRun(effect, this.starter);
    return { effectId, revision: record.revision, created: true, stage: effect.stage as EffectStage };
  }

  /**
   * Starts the effect's workflow, or joins the open run. A run that closed without a terminal stage in
   * the ledger (terminated, failed, reset, or the approver died before the start) is started again: the
   * ledger, not Temporal, decides that an effect is finished, and a resumed run reads back before it
   * sends anything. Callers never start an effect the ledger shows as terminal.
   */
  private async startRun<R>(
    effect: EffectRow,
    starter: EffectRunStarter<R>,
    releasedSteps?: { step: string; destination: string }[],
  ): Promise<R> {
    const contract = contractIn(this.destinations, effect.destination);
    if (!contract) throw new Error(`effect ${effect.effectId}: ${notKnownHere(effect.destination)}`);
    // A revised effect's run sends its latest revision; an approval's input stays what v3/v4 took.
    const revised = effect.revision > 1;
    const released = releasedSteps ?? (await readReleasedSteps(this.options.db, effect.effectId));
    const steps = released.map((s) => ({
      ...this.stepInput(s.step, s.destination),
      ...(revised && 'idempotencyKey' in s ? { idempotencyKey: String(s.idempotencyKey) } : {}),
    }));
    // Within Temporal's limits on any server (temporal-limits.ts): a start refused for its size never runs.
    const summary = `${effect.effectId} · ${effect.destination} ${effect.operation} · ${effect.summary}`;
    const input: EffectInput = {
      effectId: effect.effectId,
      destination: effect.destination,
      operation: effect.operation,
      summary: effect.summary,
      callTimeoutMs: this.options.callTimeoutMs ?? contract.callTimeoutMs,
      retryAfterProvenAbsence: contract.retryAfterProvenAbsence,
      // The retention recorded at approval: what the key was promised, whatever a later deploy declares.
      ...keyRetention(effect.mechanism, effect.keyRetentionSeconds),
      readbackIntervalMs: this.options.readbackIntervalMs ?? DEFAULT_READBACK_INTERVAL_MS,
      readbackMaxIntervalMs: Math.max(
        this.options.readbackIntervalMs ?? DEFAULT_READBACK_INTERVAL_MS,
        this.options.readbackMaxIntervalMs ?? contract.readbackMaxIntervalMs,
      ),
      ...(this.options.readbacksPerRun ? { readbacksPerRun: this.options.readbacksPerRun } : {}),
      ...(this.options.absenceGraceMs === undefined ? {} : { absenceGraceMs: this.options.absenceGraceMs }),
      // Only a multi-step effect names its steps: a single-step input stays what v3 took.
      ...(steps.length > 1 ? { steps } : {}),
      ...(revised ? { releaseRevision: effect.revision } : {}),
      ...(this.options.localAttempts ? { attemptLocally: true } : {}),
    };
    const options = {
      workflowId: effect.effectId,
      taskQueue: this.options.taskQueue,
      args: [input] as [EffectInput],
      // After a closed run (the ledger says it is not finished) start the next.
      workflowIdReusePolicy: 'ALLOW_DUPLICATE' as const,
      typedSearchAttributes: [
        { key: effectStageKey, value: effect.stage },
        { key: effectDestinationKey, value: effect.destination },
        { key: effectOperationKey, value: effect.operation },
        { key: effectSummaryKey, value: keywordValue(summary) },
      ],
      staticSummary: staticSummaryText(summary),
      staticDetails: [
        `**Effect** \`${effect.effectId}\``,
        '',
        `- destination: ${effect.destination} (${effect.mechanism}${effect.keyRetentionSeconds ? `, key kept ${effect.keyRetentionSeconds} s` : effect.mechanism === 'transactional' ? ', key kept as long as the object' : ''})`,
        `- operation: \`${effect.operation}\``,
        `- approved by ${effect.approvedBy} under ${effect.authorizationRef}`,
        `- fingerprint \`${effect.fingerprint.slice(0, 16)}…\``,
      ].join('\n'),
    };
    // A revision must reach a run that carries it. An open run may be an older revision's, still closing as
    // rejected: signalled in the same call that would start one, it cannot close without seeing the signal
    // (Temporal refuses to complete a run with a signal it has not handled) and hands over to this revision.
    if (revised)
      return starter.signalWithStart({
        ...options,
        signal: revisionReleasedSignal,
        signalArgs: [{ revision: effect.revision }],
      });
    // Join an open run.
    return starter.start({ ...options, workflowIdConflictPolicy: 'USE_EXISTING' });
  }

  /** A step's policy is its own destination's, with this client's overrides. */
  private stepInput(step: string, destination: string): StepInput {
    const contract = contractIn(this.destinations, destination);
    if (!contract) throw new Error(`step ${step}: ${notKnownHere(destination)}`);
    const interval = this.options.readbackIntervalMs ?? DEFAULT_READBACK_INTERVAL_MS;
    return {
      step,
      destination,
      callTimeoutMs: this.options.callTimeoutMs ?? contract.callTimeoutMs,
      retryAfterProvenAbsence: contract.retryAfterProvenAbsence,
      readbackMaxIntervalMs: Math.max(interval, this.options.readbackMaxIntervalMs ?? contract.readbackMaxIntervalMs),
      ...keyRetention(contract.mechanism, contract.keyRetentionSeconds),
    };
  }

  /**
   * One ledger reconciler pass (reconciler-pass.ts, docs/reconciler.md): every effect the ledger shows as
   * not terminal (and not just approved, `olderThanMs`) whose workflow is not running gets a run again. It
   * pages through all of them, asks visibility in bulk, describes only the candidates, and survives any
   * effect whose start fails (recorded with why; the report counts it).
   */
  async resumeStranded(options: ReconcilerPassOptions = {}): Promise<ReconcilerPassReport> {
    const pageSize = options.pageSize ?? this.options.reconcilerPageSize;
    return runReconcilerPass(
      { client: this.options.client, db: this.options.db, start: (effect) => this.startRun(effect, this.starter) },
      { ...options, ...(pageSize ? { pageSize } : {}) },
    );
  }

  /** Waits for the effect's workflow to finish (or to be reported as finished by the ledger). */
  async result(effectId: string): Promise<EffectResult> {
    return this.options.client.workflow.getHandle<typeof effectWorkflow>(effectId).result();
  }

  async status(effectId: string): Promise<EffectReport> {
    const trail = await readTrail(this.options.db, effectId);
    if (!trail) throw new EffectNotFoundError(effectId);
    try {
      const { live, retrying } = await this.options.client.withDeadline(Date.now() + LIVE_VIEW_DEADLINE_MS, () =>
        this.live(effectId),
      );
      return { trail, live, ...(retrying.length ? { retrying } : {}) };
    } catch (error) {
      // The ledger answers on its own: say which part could not be seen, and why.
      const why = error instanceof Error ? error.message : String(error);
      return {
        trail,
        live: null,
        liveUnavailable: `the workflow's live view did not answer within ${LIVE_VIEW_DEADLINE_MS} ms (Temporal unreachable, or no worker polling): ${why}`,
      };
    }
  }

  /**
   * A human decision on an UNKNOWN effect, through the workflow's `decide` update: the answer says
   * whether it was accepted. A payload the validator refuses throws WorkflowUpdateFailedError.
   */
  async decide(
    effectId: string,
    decision: DecisionKind,
    payload: {
      actor: string;
      reason: string;
      externalId?: string;
      externalUrl?: string;
      /** abandon: the person saw at the destination that the object is not there (needed where the last look could not tell). */
      checkedAbsent?: true;
      /** What the decision answers (the status's `decideOn`): refused as stale once the effect moved past it. */
      step?: string;
      revision?: number;
      attempt?: number;
    },
    /** Names this decision: sent again (after a timeout, say) with the same ID, it is one decision. */
    decisionId: string = randomUUID(),
  ): Promise<DecideResponse> {
    try {
      return await this.options.client.workflow
        .getHandle(effectId)
        .executeUpdate(decideUpdate, { args: [{ decision, ...payload }], updateId: decisionId });
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
      // No run took it: say what the ledger knows instead of Temporal's bare "not found".
      const effect = await readEffect(this.options.db, effectId);
      if (!effect) throw new EffectNotFoundError(effectId);
      const stage = effect.stage as EffectStage;
      const failure = isTerminal(stage) ? null : await readStartFailure(this.options.db, effectId);
      throw new EffectNotRunningError(
        effectId,
        stage,
        isTerminal(stage),
        failure ? { reason: failure.reason, since: failure.firstFailedAt, failures: failure.failures } : null,
      );
    }
  }

  /**
   * The provider is back: the effect's waiting look is taken now instead of at its scheduled time. Nothing is
   * decided. Where a look waits (its `watchForObject` activity between attempts), the activity is reset: its retry
   * delay is discarded and the look goes at once, with no signal, no workflow task and no history event. Where none
   * waits (the effect is between looks for another reason, or not in UNKNOWN), the `look-now` signal asks the
   * workflow instead (an effect not waiting in UNKNOWN ignores it). Says which it was.
   */
  async lookNow(
    effectId: string,
    asked: { actor: string; reason: string },
    { by = 'reset-or-signal' }: { by?: 'reset-or-signal' | 'signal' } = {},
  ): Promise<'reset' | 'signal'> {
    const { client } = this.options;
    if (by === 'reset-or-signal') {
      const reset = await client.workflowService
        .resetActivity({
          namespace: client.options.namespace,
          execution: { workflowId: effectId },
          type: LOOK_ACTIVITY,
          identity: `${asked.actor}: ${asked.reason}`.slice(0, 255),
        })
        .then(
          () => true,
          // No waiting look to reset (or a server without the activity API): the workflow is asked instead.
          () => false,
        );
      if (reset) return 'reset';
    }
    await client.workflow.getHandle(effectId).signal(lookNowSignal, asked);
    return 'signal';
  }

  listByStage(stage: EffectStage, limit?: number) {
    return listEffectsByStage(this.options.db, stage, limit);
  }

  /** Effects the ledger reconciler's latest passes could not start, and why: they have no workflow. */
  listUnstartable(limit?: number) {
    return listStartFailures(this.options.db, limit);
  }

  private async live(effectId: string): Promise<{ live: EffectStatus | null; retrying: RetryingActivity[] }> {
    const handle = this.options.client.workflow.getHandle(effectId);
    try {
      const description = await handle.describe();
      if (description.status.name !== 'RUNNING') return { live: null, retrying: [] };
      const retrying = (description.raw.pendingActivities ?? []).flatMap((pending): RetryingActivity[] =>
        pending.lastFailure?.message
          ? [
              {
                activity: pending.activityType?.name ?? '(activity)',
                attempt: pending.attempt ?? 0,
                lastFailure: pending.lastFailure.message,
                ...(pending.lastWorkerIdentity ? { worker: pending.lastWorkerIdentity } : {}),
              },
            ]
          : [],
      );
      return { live: await handle.query(statusQuery), retrying };
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return { live: null, retrying: [] };
      throw error;
    }
  }

  private async fact(effectId: string) {
    const fact = await readFact(this.options.db, effectId);
    return fact ? { externalId: fact.externalId, externalUrl: fact.externalUrl } : null;
  }
}

/** The fingerprint an approval of this payload would have; null when the request has no usable payload. */
function fingerprintOf(effect: EffectRow, request: RevisionRequest): string | null {
  try {
    return effectFingerprint({
      destination: effect.destination,
      operation: effect.operation,
      payload: request.payload,
    });
  } catch {
    return null;
  }
}

function notKnownHere(destination: string): string {
  return `no destination ${destination} is known to this client (give it that destination: the destinations option, or EFFECT_LEDGER_DESTINATIONS)`;
}

/**
 * The key retention a run heeds: a provider's declared seconds, or 0 where nothing dedupes a resend (`none`, and a
 * `natural_key` such as a Message-ID: the mailbox does not refuse a second one), so a retry leaves only over a look
 * proving absence. Null (a transactional key, stored with the object): no expiry.
 */
function keyRetention(mechanism: string, seconds: number | null | undefined): { keyRetentionSeconds?: number } {
  if (mechanism === 'none' || mechanism === 'natural_key') return { keyRetentionSeconds: 0 };
  return seconds != null ? { keyRetentionSeconds: seconds } : {};
}
