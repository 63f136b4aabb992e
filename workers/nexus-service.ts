// The Nexus service `effect-ledger` (client/nexus-contract.ts), as the worker plugin registers it: a workflow in
// another namespace, or in Go, Java or Python, approves an effect and awaits its result through a Nexus endpoint,
// without our client library or a database URL (docs/nexus.md). Approval is EffectLedgerClient's own: the same
// validation, the same ledger row before the run, the same run; only the start links the caller to the run.
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { startWorkflow, type WorkflowHandle, WorkflowRunOperationHandler } from '@temporalio/nexus';
import * as nexus from 'nexus-rpc';
import { z } from 'zod';
import type { ApprovalResult, EffectLedgerClient, EffectRunStarter } from '../client/effect-ledger-client.js';
import { type EffectApproval, effectLedgerNexusService, type JsonOf } from '../client/nexus-contract.js';
import { EffectConflictError, EffectNotFoundError, InvalidEffectRequestError } from '../ledger/errors.js';
import { EFFECT_WORKFLOW_TYPE, type EffectResult } from '../workflows/contract.js';
import type { effectWorkflow } from '../workflows/effect-workflow.js';

/** The service's handlers, approving and reading through `effects` (the plugin's client for the worker's queue). */
export function effectLedgerNexusHandler(effects: EffectLedgerClient) {
  return nexus.serviceHandler(effectLedgerNexusService, {
    approve: new ApproveOperation(effects),
    status: async (_ctx, input) => {
      const { effectId } = parsed(statusRequest, input);
      return asJson(await refusedAsOperationError(() => effects.status(effectId)));
    },
  });
}

const statusRequest = z.object({ effectId: z.string().min(1) }).strict();

/**
 * `approve`, backed by the effect's workflow: the workflow-run handler's token names the run (workflow ID = effect
 * ID), and the SDK's startWorkflow attaches the caller's completion callback to it, so the caller's await gets
 * the effect's result. A repeat while the run is open joins it (USE_EXISTING attaches its callback too); a
 * repeat after the effect ended is answered at once, and no run is started again.
 */
class ApproveOperation implements nexus.OperationHandler<EffectApproval, EffectResult> {
  constructor(private readonly effects: EffectLedgerClient) {}

  async start(
    ctx: nexus.StartOperationContext,
    input: EffectApproval,
  ): Promise<nexus.HandlerStartOperationResult<EffectResult>> {
    const { approval, run } = await refusedAsOperationError(() =>
      this.effects.approveThrough(input, linkedStarter(ctx, this.effects)),
    );
    if (!run) return nexus.HandlerStartOperationResult.sync(await this.endedWith(approval));
    return new WorkflowRunOperationHandler<EffectApproval, EffectResult>(async () => run).start(ctx, input);
  }

  /**
   * Refused: one caller's cancellation does not stop an approved effect. Its request may be in flight, and other
   * callers may await the same effect; a person abandons it (docs/operators.md).
   */
  async cancel(): Promise<void> {
    throw new nexus.HandlerError(
      'NOT_IMPLEMENTED',
      'an approved effect is not cancelled by its caller (its request may be in flight, other callers may await it): a person abandons it (docs/operators.md)',
    );
  }

  /** An effect that had already ended: its run's own result (what its first caller got), else the ledger's. */
  private async endedWith(approval: ApprovalResult): Promise<EffectResult> {
    try {
      return await this.effects.result(approval.effectId);
    } catch (error) {
      // Its history expired, or its run was terminated after the ledger recorded the end.
      if (!(error instanceof WorkflowNotFoundError || error instanceof WorkflowFailedError)) throw error;
    }
    const { effectId, stage, fact } = approval;
    return {
      effectId,
      stage,
      ...(fact ? { externalId: fact.externalId } : {}),
      ...(fact?.externalUrl ? { externalUrl: fact.externalUrl } : {}),
    };
  }
}

/** Starts the effect's run as the Nexus operation's backing run, linked both ways to the caller. */
function linkedStarter(
  ctx: nexus.StartOperationContext,
  effects: EffectLedgerClient,
): EffectRunStarter<WorkflowHandle<EffectResult>> {
  return {
    start: (options) => startWorkflow<typeof effectWorkflow>(ctx, EFFECT_WORKFLOW_TYPE, options),
    // The SDK's signal-with-start attaches no completion callback: the revision's signal goes as the client sends
    // it, then the caller joins the run it reached.
    async signalWithStart(options) {
      await effects.temporal.workflow.signalWithStart<typeof effectWorkflow, [unknown]>(EFFECT_WORKFLOW_TYPE, options);
      const { signal, signalArgs, ...start } = options;
      return startWorkflow<typeof effectWorkflow>(ctx, EFFECT_WORKFLOW_TYPE, {
        ...start,
        workflowIdConflictPolicy: 'USE_EXISTING',
      });
    },
  };
}

/** The typed refusals of the approval API, and the operation error a caller in any language gets for each. */
const REFUSALS = [InvalidEffectRequestError, EffectConflictError, EffectNotFoundError];

/**
 * Runs `fn`; a refusal (bad input, a conflict, an unknown effect: nothing was written) becomes a failed operation,
 * never retried, whose cause carries the error's name as its type and its fields as details. Anything else (the
 * ledger or Temporal unreachable) stays a retryable handler error: Nexus tries again, and approval is idempotent.
 */
async function refusedAsOperationError<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (!REFUSALS.some((refusal) => error instanceof refusal)) throw error;
    const { name, message, ...fields } = error as Error;
    throw new nexus.OperationError('failed', message, {
      cause: ApplicationFailure.create({ type: name, message, nonRetryable: true, details: [fields] }),
    });
  }
}

function parsed<T>(schema: z.ZodType<T>, input: unknown): T {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issues = result.error.issues.map((i) => `${i.path.join('.') || '(input)'}: ${i.message}`);
  throw new nexus.OperationError('failed', `malformed request: ${issues.join('; ')}`, {
    cause: ApplicationFailure.create({ type: 'InvalidRequest', nonRetryable: true, details: [{ issues }] }),
  });
}

/** The value exactly as it crosses: what a caller in any language reads. */
function asJson<T>(value: T): JsonOf<T> {
  return JSON.parse(JSON.stringify(value)) as JsonOf<T>;
}
