// What backend code sends to approve an effect, and its validation. A request that fails here gets
// a typed InvalidEffectRequestError and writes nothing.
import { z } from 'zod';
import { destinationContracts } from '../activities/destinations/built-in-contracts.js';
import { contractIn, type DestinationCatalog } from '../domain/destination.js';
import type { DestinationContract, ReleasedPackage, StepPlan } from '../domain/destination-contract.js';
import { EFFECT_ID_PATTERN, EFFECT_ID_RULE } from '../domain/effect-id.js';
import { idempotencyKeyFor, MAIN_STEP, STEP_SOURCE } from '../domain/idempotency-key.js';
import { cutText, findJsonProblem, MAX_JSON_DEPTH, RESERVED_KEYS, textProblem } from '../domain/storable.js';
import { InvalidEffectRequestError } from '../ledger/errors.js';
import { canonicalJson, effectFingerprint, NotJsonError, sha256Hex } from '../ledger/fingerprint.js';
import type { EffectRegistration, InitialRelease, ReleasedStep } from '../ledger/registration.js';

/** The payload's canonical JSON may not exceed this many bytes. */
export const MAX_PAYLOAD_BYTES = 16 * 1024;

/** The payload's deepest nesting of objects and arrays (the payload itself is level 1). */
export const MAX_PAYLOAD_DEPTH = MAX_JSON_DEPTH;

/** The request's text fields, checked for what PostgreSQL cannot store before anything else reads them. */
const TEXT_FIELDS = ['effectId', 'destination', 'operation', 'approvedBy', 'authorizationRef', 'summary'] as const;

export const effectRequestSchema = z
  .object({
    effectId: z.string().regex(EFFECT_ID_PATTERN, EFFECT_ID_RULE),
    destination: z.string().min(1).max(64),
    operation: z.string().min(1).max(64),
    payload: z.record(z.string(), z.unknown()),
    approvedBy: z.string().trim().min(1, 'approvedBy is required').max(200),
    authorizationRef: z.string().trim().min(1, 'authorizationRef is required').max(200),
    /** Display only: not part of the fingerprint. */
    summary: z.string().trim().min(1).max(200).optional(),
  })
  .strict();

export type EffectRequest = z.infer<typeof effectRequestSchema>;

export interface ValidatedEffectRequest extends EffectRequest {
  contract: DestinationContract;
  fingerprint: string;
  summary: string;
  /** The outbound steps, in the order they leave; one (`main`) for a single-step operation. */
  steps: StepPlan[];
}

const STEP_PATTERN = new RegExp(STEP_SOURCE);

/**
 * The operation's outbound steps: its contract's plan for a multi-step operation, else one `main` step.
 * Each step is checked against its own destination's operation, as a single-step request would be.
 */
function planSteps(
  contract: DestinationContract,
  operation: string,
  payload: Record<string, unknown>,
  catalog: DestinationCatalog,
): StepPlan[] {
  const split = contract.steps && Object.hasOwn(contract.steps, operation) ? contract.steps[operation] : undefined;
  if (!split) return [{ step: MAIN_STEP, destination: contract.name, operation, payload }];
  const steps = split(payload);
  const names = steps.map((s) => s.step);
  const issues: string[] = [];
  if (steps[0]?.step !== MAIN_STEP || steps[0].destination !== contract.name)
    issues.push(`the plan's first step must be "${MAIN_STEP}" on ${contract.name}`);
  if (new Set(names).size !== names.length) issues.push(`step names repeat: ${names.join(', ')}`);
  for (const step of steps) {
    if (!STEP_PATTERN.test(step.step)) issues.push(`step ${JSON.stringify(step.step)} is not a step name`);
    const target = contractIn(catalog, step.destination);
    const schema =
      target && Object.hasOwn(target.operations, step.operation) ? target.operations[step.operation] : undefined;
    if (!schema) {
      issues.push(`step ${step.step}: no operation ${step.operation} at ${step.destination}`);
      continue;
    }
    const parsed = schema.safeParse(step.payload);
    if (!parsed.success) issues.push(...issuesOf(parsed.error).map((issue) => `step ${step.step}: ${issue}`));
  }
  if (issues.length)
    throw new InvalidEffectRequestError('invalid_payload', `invalid steps for ${contract.name} ${operation}`, issues);
  return steps;
}

/** Display text fits the ledger's 300-character summary, whatever the payload held; never half a surrogate pair. */
function oneLine(text: string, max = 200): string {
  return cutText(text.replace(/\s+/g, ' ').trim(), max);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Poison refused at the door, before zod, hashing or anything recursive touches the request: text
 * PostgreSQL cannot store (NUL, lone surrogates) in any field, key or payload string; reserved keys;
 * nesting past MAX_PAYLOAD_DEPTH; circular values; more values than the size limit could hold.
 */
function refusePoison(raw: unknown): void {
  if (!isPlainObject(raw)) return; // zod says what is wrong with it
  const issues: string[] = [];
  for (const key of Object.keys(raw)) {
    const problem = textProblem(key);
    if (problem) issues.push(`(request): a field name ${problem}`);
    else if (RESERVED_KEYS.includes(key)) issues.push(`(request): the field name "${key}" is reserved`);
  }
  for (const field of TEXT_FIELDS) {
    const value = raw[field];
    const problem = typeof value === 'string' ? textProblem(value) : null;
    if (problem) issues.push(`${field}: ${problem}`);
  }
  if (issues.length) throw new InvalidEffectRequestError('malformed', 'malformed effect request', issues);
  if (!isPlainObject(raw.payload)) return;
  // Every value takes at least one byte of JSON: more values than bytes allowed is too large, unread.
  const problem = findJsonProblem(raw.payload, 'payload', { maxDepth: MAX_PAYLOAD_DEPTH, maxNodes: MAX_PAYLOAD_BYTES });
  if (problem?.kind === 'size')
    throw new InvalidEffectRequestError('payload_too_large', `payload is larger than ${MAX_PAYLOAD_BYTES} bytes`, [
      problem.message,
    ]);
  if (problem)
    throw new InvalidEffectRequestError('invalid_payload', 'payload is not storable JSON', [problem.message]);
}

function issuesOf(error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }): string[] {
  return error.issues.map((issue) => `${issue.path.map(String).join('.') || '(request)'}: ${issue.message}`);
}

/** Validates against the destinations a client was given (default: the built-ins). */
export function validateEffectRequest(
  raw: unknown,
  catalog: DestinationCatalog = destinationContracts,
): ValidatedEffectRequest {
  refusePoison(raw);
  const parsed = effectRequestSchema.safeParse(raw);
  if (!parsed.success)
    throw new InvalidEffectRequestError('malformed', 'malformed effect request', issuesOf(parsed.error));
  const request = parsed.data;
  // Object.hasOwn: "constructor" or "toString" name no destination, whatever Object.prototype holds.
  const contract = contractIn(catalog, request.destination);
  if (!contract) {
    throw new InvalidEffectRequestError(
      'unknown_destination',
      `unknown destination ${JSON.stringify(request.destination)}`,
      [`known: ${Object.keys(catalog).join(', ') || '(none)'}`],
    );
  }
  const payloadSchema = Object.hasOwn(contract.operations, request.operation)
    ? contract.operations[request.operation]
    : undefined;
  if (!payloadSchema) {
    throw new InvalidEffectRequestError(
      'unknown_operation',
      `destination ${contract.name} has no operation ${JSON.stringify(request.operation)}`,
      [`known: ${Object.keys(contract.operations).join(', ')}`],
    );
  }
  let canonical: string;
  try {
    canonical = canonicalJson(request.payload, 'payload');
  } catch (error) {
    if (error instanceof NotJsonError)
      throw new InvalidEffectRequestError('invalid_payload', 'payload is not plain JSON', [error.message]);
    throw error;
  }
  const bytes = Buffer.byteLength(canonical, 'utf8');
  if (bytes > MAX_PAYLOAD_BYTES) {
    throw new InvalidEffectRequestError(
      'payload_too_large',
      `payload is ${bytes} bytes; the limit is ${MAX_PAYLOAD_BYTES}`,
    );
  }
  const payload = payloadSchema.safeParse(request.payload);
  if (!payload.success)
    throw new InvalidEffectRequestError(
      'invalid_payload',
      `invalid payload for ${contract.name} ${request.operation}`,
      issuesOf(payload.error),
    );
  return {
    ...request,
    contract,
    fingerprint: effectFingerprint(request),
    summary: oneLine(request.summary ?? contract.describe(request.operation, request.payload)),
    steps: planSteps(contract, request.operation, payload.data, catalog),
  };
}

/**
 * The exact package a step's contract builds. A contract that cannot build one from this payload (a path field
 * missing, say) refuses the request, typed, before anything is written.
 */
export function packageFor(
  contract: DestinationContract,
  reference: string,
  operation: string,
  payload: Record<string, unknown>,
): ReleasedPackage {
  try {
    return contract.buildPackage(reference, operation, payload);
  } catch (error) {
    throw new InvalidEffectRequestError(
      'invalid_payload',
      `${contract.name} cannot build the package for ${operation}`,
      [error instanceof Error ? error.message : String(error)],
    );
  }
}

/**
 * What approval writes: the effect's registration, and the exact packages that will leave, one per step —
 * fixed now, with the approval, and never rebuilt (its immutable release). A step's package carries its
 * own reference: the effect ID for `main`, the step's key for the others, so readback tells them apart.
 */
export function approvalRecords(
  valid: ValidatedEffectRequest,
  catalog: DestinationCatalog = destinationContracts,
): {
  registration: EffectRegistration;
  release: InitialRelease;
} {
  const steps = valid.steps.map((plan, i): ReleasedStep => {
    const contract = contractIn(catalog, plan.destination) as DestinationContract;
    const idempotencyKey = idempotencyKeyFor(valid.effectId, plan.step);
    const pkg = packageFor(contract, idempotencyKey, plan.operation, plan.payload);
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
  return {
    registration: {
      effectId: valid.effectId,
      destination: valid.destination,
      operation: valid.operation,
      fingerprint: valid.fingerprint,
      payload: valid.payload,
      approvedBy: valid.approvedBy,
      authorizationRef: valid.authorizationRef,
      summary: valid.summary,
      mechanism: valid.contract.mechanism,
      keyRetentionSeconds: valid.contract.keyRetentionSeconds,
    },
    release: { steps },
  };
}
