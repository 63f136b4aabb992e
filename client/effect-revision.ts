// A revision of a refused effect, as a person submits it, and the rows it becomes. Checked here for a typed
// answer before anything is written; the ledger's triggers (migration 0006) refuse the same things again.
//
// What must stay equal to the approval (its intent), and why: the destination and the operation (where it goes
// and what it does), and each step's target (to what: the charge refunded, the request a task is for, the
// channel posted on). A change there is another effect, approved under another ID. The payload may change
// otherwise: the amount, the text. Steps that already have their fact stay exactly as they happened.
import { z } from 'zod';
import { destinationContracts } from '../activities/destinations/built-in-contracts.js';
import { contractIn, type DestinationCatalog } from '../domain/destination.js';
import type { DestinationContract } from '../domain/destination-contract.js';
import { revisionKeyFor } from '../domain/idempotency-key.js';
import { textProblem } from '../domain/storable.js';
import { InvalidEffectRequestError, RevisionRefusedError } from '../ledger/errors.js';
import { canonicalJson, sha256Hex } from '../ledger/fingerprint.js';
import type { RevisionRecord } from '../ledger/revision.js';
import type { EffectTrail } from '../ledger/trail.js';
import { packageFor, validateEffectRequest } from './effect-request.js';

export const revisionRequestSchema = z
  .object({
    payload: z.record(z.string(), z.unknown()),
    approvedBy: z.string().trim().min(1, 'approvedBy is required').max(200),
    authorizationRef: z.string().trim().min(1, 'authorizationRef is required').max(200),
    reason: z.string().trim().min(1, 'reason is required').max(1000),
    /** Optional, and then they must be the effect's: a revision never changes them. */
    destination: z.string().optional(),
    operation: z.string().optional(),
  })
  .strict();

export type RevisionRequest = z.infer<typeof revisionRequestSchema>;

/** The revision's rows, and its fingerprint (the same hash an approval of this payload would have). */
export function planRevision(
  trail: EffectTrail,
  raw: unknown,
  catalog: DestinationCatalog = destinationContracts,
): RevisionRecord {
  const { effect } = trail;
  const parsed = revisionRequestSchema.safeParse(raw);
  if (!parsed.success)
    throw new InvalidEffectRequestError(
      'malformed',
      'malformed revision request',
      parsed.error.issues.map((i) => `${i.path.map(String).join('.') || '(request)'}: ${i.message}`),
    );
  const request = parsed.data;
  const problem = textProblem(request.reason);
  if (problem) throw new InvalidEffectRequestError('malformed', 'malformed revision request', [`reason: ${problem}`]);
  for (const field of ['destination', 'operation'] as const) {
    const asked = request[field];
    if (asked !== undefined && asked !== effect[field])
      throw new RevisionRefusedError(
        effect.effectId,
        'intent_changed',
        `its ${field} is ${effect[field]}; a revision cannot make it ${asked} (approve a new effect instead)`,
      );
  }
  // The same checks an approval makes: payload schema, size, poison, each step against its destination.
  const valid = validateEffectRequest(
    {
      effectId: effect.effectId,
      destination: effect.destination,
      operation: effect.operation,
      payload: request.payload,
      approvedBy: request.approvedBy,
      authorizationRef: request.authorizationRef,
    },
    catalog,
  );
  const revision = effect.revision + 1;
  const latest = trail.releases.filter((r) => r.revision === effect.revision);
  const first = trail.releases.filter((r) => r.revision === 1);
  const settled = new Set(trail.facts.map((f) => f.step));
  const steps = valid.steps.map((plan, i) => {
    const contract = contractIn(catalog, plan.destination) as DestinationContract;
    const before = latest.find((r) => r.step === plan.step);
    const original = first.find((r) => r.step === plan.step);
    if (!before || !original)
      throw new RevisionRefusedError(effect.effectId, 'intent_changed', `step ${plan.step} was never released`);
    if (settled.has(plan.step)) {
      // As it happened: the same package under the same key, or the revision is refused.
      const again = packageFor(contract, before.idempotencyKey, plan.operation, plan.payload);
      if (sha256Hex(canonicalJson(again.body)) !== before.bodySha256)
        throw new RevisionRefusedError(
          effect.effectId,
          'settled_step_changed',
          `step ${plan.step} already has its fact; the revision would change what it sent`,
        );
      return { ...before, package: before.package as typeof again, idempotencyKey: before.idempotencyKey };
    }
    const idempotencyKey = revisionKeyFor(effect.effectId, plan.step, revision, contract.keyScope);
    const pkg = packageFor(contract, idempotencyKey, plan.operation, plan.payload);
    const drift: string[] = (['destination', 'operation'] as const).filter((f) => plan[f] !== original[f]);
    if (pkg.target !== original.target) drift.push('target');
    if (drift.length)
      throw new RevisionRefusedError(
        effect.effectId,
        'intent_changed',
        `step ${plan.step} changes its ${drift.join(', ')} (${original.target} → ${pkg.target}); that is another effect`,
      );
    return {
      step: plan.step,
      position: i + 1,
      destination: plan.destination,
      operation: plan.operation,
      package: pkg,
      bodySha256: sha256Hex(canonicalJson(pkg.body)),
      idempotencyKey,
    };
  });
  if (steps.length !== latest.length)
    throw new RevisionRefusedError(effect.effectId, 'intent_changed', 'the revision has other steps than the approval');
  return {
    effectId: effect.effectId,
    revision,
    payload: valid.payload,
    fingerprint: valid.fingerprint,
    intentSha256: intentOf(effect.destination, effect.operation, steps),
    approvedBy: valid.approvedBy,
    authorizationRef: valid.authorizationRef,
    reason: request.reason,
    steps,
  };
}

/** The approval's intent, hashed: destination, operation, and each step's destination, operation and target. */
export function intentOf(
  destination: string,
  operation: string,
  steps: readonly { step: string; destination: string; operation: string; package: { target: string } }[],
): string {
  return sha256Hex(
    canonicalJson({
      destination,
      operation,
      steps: steps.map((s) => ({
        step: s.step,
        destination: s.destination,
        operation: s.operation,
        target: s.package.target,
      })),
    }),
  );
}
