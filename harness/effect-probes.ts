// What a user checks about one effect: its stage as the workflow says it, its ledger trail, and what
// the provider itself received (its request log), which is the view that matters when they disagree.
import assert from 'node:assert/strict';
import { WorkflowNotFoundError } from '@temporalio/client';
import { destinationContracts } from '../activities/destinations/registry.js';
import { idempotencyKeyFor, MAIN_STEP, parseKey } from '../domain/idempotency-key.js';
import type { EffectStage } from '../domain/stages.js';
import { readTrail } from '../ledger/trail.js';
import { waitFor, within } from '../stack/wait-for.js';
import { decideUpdate, type EffectResult, type EffectStatus, statusQuery } from '../workflows/contract.js';
import { LEDGER_RECONCILER_WORKFLOW_TYPE } from '../workflows/ledger-reconciler.js';
import type { Stack } from './local-stack.js';
import type { LoggedRequest } from './simulator/request-log.js';

/** The looks at the effect's object the ledger holds (its readback evidence). */
export async function looksOf(stack: Stack, effectId: string): Promise<number> {
  return (await stack.effects.status(effectId)).trail.evidence.filter((e) => e.kind === 'readback').length;
}

/** The events in the history of the effect's current run. */
export async function historyLength(stack: Stack, effectId: string): Promise<number> {
  return (await stack.env.client.workflow.getHandle(effectId).fetchHistory()).events?.length ?? 0;
}

/** How long any helper waits for a workflow to close before it fails instead of hanging. */
export const RESULT_TIMEOUT_MS = 90_000;

/** Waits (boundedly) for an effect's workflow to close. */
export function resultOf(stack: Stack, effectId: string, timeoutMs = RESULT_TIMEOUT_MS): Promise<EffectResult> {
  return within(stack.effects.result(effectId), `${effectId} to close`, timeoutMs);
}

/** Approves an effect while a worker polls, and waits for its workflow to close. */
export function runEffect(stack: Stack, request: { effectId: string }, effects = stack.effects): Promise<EffectResult> {
  return stack.withWorker(async () => {
    await effects.approve(request);
    return resultOf(stack, request.effectId);
  });
}

export function liveStatus(stack: Stack, effectId: string): Promise<EffectStatus> {
  return stack.env.client.workflow.getHandle(effectId).query(statusQuery);
}

/** Waits until the running workflow reports `stage` and says it awaits `awaiting` (a substring). */
export function waitForStage(
  stack: Stack,
  effectId: string,
  stage: EffectStage,
  awaiting?: string,
): Promise<EffectStatus> {
  return waitFor(
    async () => {
      const status = await liveStatus(stack, effectId);
      return status.stage === stage && (!awaiting || status.awaiting?.includes(awaiting)) ? status : undefined;
    },
    `${effectId} to reach ${stage}${awaiting ? ` awaiting "${awaiting}"` : ''}`,
  );
}

/**
 * Wakes a waiting run `times` times with decisions for an attempt it is not on, each refused as stale: what makes a
 * run hand over (continue as new) in a test, since its looks wake nothing (`readbacksPerRun` counts wakes).
 */
export async function wakeWithStaleDecisions(stack: Stack, effectId: string, times: number, step?: string) {
  for (let i = 0; i < times; i++) {
    const answer = await stack.env.client.workflow.getHandle(effectId).executeUpdate(decideUpdate, {
      args: [
        {
          decision: 'abandon',
          actor: 'ops@example.com',
          reason: 'an old ticket',
          attempt: 99,
          ...(step ? { step } : {}),
        },
      ],
    });
    assert.equal(answer.accepted, false, 'a decision for attempt 99 is refused as stale');
  }
}

/** The keyed API's objects of an effect's main step, whichever revision made them (`effectID`, `effectID#r2`). */
export async function objectsFor(stack: Stack, effectId: string) {
  return (await stack.simulator.objects()).filter((o) => {
    const named = parseKey(String(o.metadata.effect_id ?? ''));
    return named?.effectId === effectId && named.step === MAIN_STEP;
  });
}

export async function socialPostsFor(stack: Stack, effectId: string) {
  return (await stack.simulator.socialPosts()).filter((p) => p.metadata?.effect_id === effectId);
}

const EFFECTFUL_PATHS = new Set(['/v1/objects', '/social/v1/posts']);

/**
 * Every effectful POST the provider received for an effect, oldest first: those whose body carries the
 * effect ID (how our adapters stamp it) and those whose key names it.
 */
export async function providerPostsFor(stack: Stack, effectId: string): Promise<LoggedRequest[]> {
  return (await stack.simulator.requests({ method: 'POST' })).filter(
    (r) =>
      EFFECTFUL_PATHS.has(r.path) &&
      // A further step's object and key carry `effectID~step`, a revision's may carry `#r<n>` (domain/idempotency-key.ts).
      (parseKey(r.effectId ?? '')?.effectId === effectId || parseKey(r.idempotencyKey ?? '')?.effectId === effectId),
  );
}

/** Every effectful POST the provider received, whoever sent it. */
export async function allProviderPosts(stack: Stack): Promise<LoggedRequest[]> {
  return (await stack.simulator.requests({ method: 'POST' })).filter((r) => EFFECTFUL_PATHS.has(r.path));
}

/**
 * Asserts from the provider's own request log: exactly `posts` effectful POSTs arrived for the effect;
 * each carried the effect's key (the effect ID on a keyed destination, no key on a key-less one) and
 * the released body's hash; each arrived after its attempt row was written, and no attempt row
 * accounts for two of them (one request per attempt: nothing retried a send behind the ledger's back).
 * Returns the POSTs for further checks.
 */
export async function assertProviderSaw(
  stack: Stack,
  effectId: string,
  expected: {
    posts: number;
    /** Requests the test itself sent as someone else (an impostor carrying our effect ID), by seq. */
    ignore?: readonly number[];
    /** One step of a multi-step effect: only its requests (carrying `effectID~step`), its release, its attempts. */
    step?: string;
  },
): Promise<LoggedRequest[]> {
  const step = expected.step ?? MAIN_STEP;
  const reference = idempotencyKeyFor(effectId, step);
  const ofStep = (ref: string | null | undefined) => {
    const named = parseKey(ref ?? '');
    return named?.effectId === effectId && named.step === step;
  };
  const posts = (await providerPostsFor(stack, effectId)).filter(
    (p) =>
      !expected.ignore?.includes(p.seq) &&
      (expected.step === undefined || ofStep(p.effectId) || ofStep(p.idempotencyKey)),
  );
  const shown = () => JSON.stringify(posts, null, 1);
  assert.equal(posts.length, expected.posts, `POSTs the provider received for ${reference}: ${shown()}`);
  if (posts.length === 0) return posts;
  const trail = await readTrail(stack.ledger.db, effectId);
  assert.ok(trail, `${effectId} is in the ledger`);
  const releases = trail.releases.filter((r) => r.step === step);
  assert.ok(releases.length, `${reference} was released`);
  const attempts = trail.attempts
    .filter((a) => a.step === step)
    .sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime());
  const used = new Set<number>();
  for (const post of posts) {
    const arrived = Date.parse(post.at);
    const attempt = attempts.filter((a) => a.startedAt.getTime() <= arrived).at(-1);
    assert.ok(attempt, `an attempt row of ${reference} existed before POST #${post.seq} arrived (${post.at})`);
    assert.ok(
      !used.has(attempt.attemptId),
      `attempt ${attempt.attemptNumber} (revision ${attempt.releaseRevision}) of ${reference} accounts for two POSTs: a send was retried without a new attempt row (${shown()})`,
    );
    used.add(attempt.attemptId);
    // What the attempt sent is its revision's release: that body, that stamped reference, that key.
    const release = releases.find((r) => r.revision === attempt.releaseRevision);
    assert.ok(release, `attempt ${attempt.attemptNumber} of ${reference} names a release of its revision`);
    assert.equal(post.bodySha256, release.bodySha256, `body hash of POST #${post.seq} is its revision's release's`);
    assert.equal(
      post.effectId,
      release.idempotencyKey,
      `POST #${post.seq} carries ${release.idempotencyKey} in its body`,
    );
    // The key is the effect ID (or effectID~step, or its revision's), never anything an attempt or a run contributes.
    const keyed = destinationContracts[release.destination]?.mechanism === 'idempotency_key';
    assert.equal(
      post.idempotencyKey,
      keyed ? release.idempotencyKey : null,
      `key of POST #${post.seq} for ${reference}`,
    );
  }
  return posts;
}

/** The run an effect's workflow ID points at now (strongly consistent, unlike a visibility listing). */
export async function latestRunId(stack: Stack, effectId: string): Promise<string | null> {
  try {
    return (await stack.env.client.workflow.getHandle(effectId).describe()).runId;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return null;
    throw error;
  }
}

/**
 * Workflows still running on the stack: every effect approved through the stack's clients (checked by
 * describe, which cannot lag) and whatever the visibility listing shows (CLI approvals).
 */
export async function openWorkflows(stack: Stack): Promise<string[]> {
  const ids = new Set(stack.approvedEffectIds);
  // A ledger reconciler pass (its schedule fires every minute wherever a worker process ran) is not an effect a
  // test left open: only effect workflows count.
  const query = `ExecutionStatus = "Running" AND WorkflowType != "${LEDGER_RECONCILER_WORKFLOW_TYPE}"`;
  for await (const w of stack.env.client.workflow.list({ query })) ids.add(w.workflowId);
  const open: string[] = [];
  for (const id of ids) {
    try {
      if ((await stack.env.client.workflow.getHandle(id).describe()).status.name === 'RUNNING') open.push(id);
    } catch (error) {
      // Not found, or an ID the server refuses outright (bad input a test tried to approve): not running.
      if (!(error instanceof WorkflowNotFoundError) && stack.approvedEffectIds.has(id) === false) throw error;
    }
  }
  return open.sort();
}
