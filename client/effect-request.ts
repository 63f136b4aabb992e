// What backend code sends to approve an effect, and its validation. A request that fails here gets
// a typed InvalidEffectRequestError and writes nothing.
import { z } from 'zod';
import { destinationContracts } from '../activities/destinations/registry.js';
import type { DestinationContract } from '../domain/destination-contract.js';
import { EFFECT_ID_PATTERN, EFFECT_ID_RULE } from '../domain/effect-id.js';
import { InvalidEffectRequestError } from '../ledger/errors.js';
import { canonicalJson, effectFingerprint, NotJsonError } from '../ledger/fingerprint.js';

/** The payload's canonical JSON may not exceed this many bytes. */
export const MAX_PAYLOAD_BYTES = 16 * 1024;

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
}

/** Display text fits the ledger's 300-character summary, whatever the payload held. */
function oneLine(text: string, max = 200): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function issuesOf(error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }): string[] {
  return error.issues.map((issue) => `${issue.path.map(String).join('.') || '(request)'}: ${issue.message}`);
}

export function validateEffectRequest(raw: unknown): ValidatedEffectRequest {
  const parsed = effectRequestSchema.safeParse(raw);
  if (!parsed.success)
    throw new InvalidEffectRequestError('malformed', 'malformed effect request', issuesOf(parsed.error));
  const request = parsed.data;
  const contract = destinationContracts[request.destination];
  if (!contract) {
    throw new InvalidEffectRequestError(
      'unknown_destination',
      `unknown destination ${JSON.stringify(request.destination)}`,
      [`known: ${Object.keys(destinationContracts).join(', ')}`],
    );
  }
  const payloadSchema = contract.operations[request.operation];
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
  };
}
