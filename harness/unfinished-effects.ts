// Unfinished effects as the ledger reconciler finds them, made on purpose: stranded (a ledger row and no
// workflow, as an approver that died leaves it), poison (a destination this client does not know: every
// start fails), and parked (a running workflow on a task queue nobody polls: running, and cheap).
import type { Client } from '@temporalio/client';
import type postgres from 'postgres';
import { approvalRecords, validateEffectRequest } from '../client/effect-request.js';
import type { EffectStage } from '../domain/stages.js';
import type { LedgerDb } from '../ledger/db.js';
import { registerEffect } from '../ledger/registration.js';
import { EFFECT_WORKFLOW_TYPE } from '../workflows/contract.js';
import { taskRequest } from './sample-requests.js';

/** A destination no client knows: an effect approved for it before it was retired can never be started here. */
export const RETIRED_DESTINATION = 'retired-api';

export interface StrandedOptions {
  /** Another destination for the effect and its main step (RETIRED_DESTINATION: a poison effect). */
  destination?: string;
  /** Where its stage stands (default `released`, as approval leaves it). */
  stage?: EffectStage;
  /** How long ago its stage moved (an effect that has waited in UNKNOWN for a day, say). */
  movedSecondsAgo?: number;
}

/** What approve() writes before it starts the workflow, and nothing more. */
export async function registerStranded(
  ledger: { db: LedgerDb; sql: postgres.Sql },
  request: unknown,
  options: StrandedOptions = {},
): Promise<string> {
  const { registration, release } = approvalRecords(validateEffectRequest(request));
  const destination = options.destination ?? registration.destination;
  await registerEffect(
    ledger.db,
    { ...registration, destination },
    { steps: release.steps.map((s) => (s.step === 'main' ? { ...s, destination } : s)) },
  );
  await moveStage(ledger.sql, [registration.effectId], options);
  return registration.effectId;
}

/** Puts effects in a stage as of some time ago (what a long wait leaves behind), as the ledger's owner. */
export async function moveStage(
  sql: postgres.Sql,
  effectIds: string[],
  { stage, movedSecondsAgo }: Pick<StrandedOptions, 'stage' | 'movedSecondsAgo'>,
): Promise<void> {
  if (!stage && movedSecondsAgo === undefined) return;
  await sql`UPDATE effects SET stage = COALESCE(${stage ?? null}, stage),
              stage_changed_at = now() - make_interval(secs => ${movedSecondsAgo ?? 0})
            WHERE effect_id = ANY(${effectIds})`;
}

/**
 * `count` copies of one registered effect under new IDs (`${prefix}${n}`, zero-padded), with their release
 * rows, in two statements: the bench's 50,000 unfinished effects in seconds, not one approval each.
 */
export async function cloneEffects(
  sql: postgres.Sql,
  templateId: string,
  prefix: string,
  count: number,
  { stage = 'unknown', movedSecondsAgo = 3600 }: Pick<StrandedOptions, 'stage' | 'movedSecondsAgo'> = {},
): Promise<string[]> {
  const width = String(count).length;
  const ids = Array.from({ length: count }, (_, i) => `${prefix}${String(i).padStart(width, '0')}`);
  await sql.begin(async (tx) => {
    await tx`INSERT INTO effects (effect_id, destination, operation, fingerprint, payload, approved_by,
               authorization_ref, summary, stage, mechanism, key_retention_seconds, revision, approved_at, stage_changed_at)
             SELECT id, e.destination, e.operation, e.fingerprint, e.payload, e.approved_by, e.authorization_ref,
               e.summary, ${stage}, e.mechanism, e.key_retention_seconds, 1, now(),
               now() - make_interval(secs => ${movedSecondsAgo})
             FROM effects e, unnest(${ids}::text[]) AS id WHERE e.effect_id = ${templateId}`;
    await tx`INSERT INTO releases (effect_id, revision, step, position, destination, operation, target, package,
               body_sha256, released_by, idempotency_key)
             SELECT id, 1, r.step, r.position, r.destination, r.operation, r.target, r.package, r.body_sha256,
               r.released_by, id
             FROM releases r, unnest(${ids}::text[]) AS id WHERE r.effect_id = ${templateId} AND r.step = 'main'`;
  });
  return ids;
}

/**
 * Starts each effect's workflow on a task queue no worker polls: Temporal shows it running, and nothing
 * ever runs it (its first workflow task waits). `concurrency` starts at a time.
 */
export async function parkWorkflows(
  client: Client,
  effectIds: string[],
  taskQueue: string,
  { concurrency = 32, onStarted }: { concurrency?: number; onStarted?: () => void } = {},
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < effectIds.length) {
      const workflowId = effectIds[next++] as string;
      await client.workflow.start(EFFECT_WORKFLOW_TYPE, {
        workflowId,
        taskQueue,
        args: [{ effectId: workflowId, parked: true }],
        workflowIdConflictPolicy: 'USE_EXISTING',
      });
      onStarted?.();
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, effectIds.length) }, lane));
}

/** A keyed-api task request, for a stranded, poison or parked effect. */
export const unfinishedRequest = (effectId: string, title = 'Prepare preview') =>
  taskRequest(effectId, `request-${effectId}`, title);
