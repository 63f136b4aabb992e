// The one rule every readback applies: an object is ours only if it carries the effect ID our adapter
// stamped into its metadata AND the released body's hash. A title match is not a match.
import type { ReadbackRequest } from '../../domain/destination-contract.js';

export interface StampedObject {
  body_sha256: string;
  metadata?: Record<string, string>;
}

export function isExactObject(object: StampedObject, request: ReadbackRequest): boolean {
  return object.metadata?.effect_id === request.effectId && object.body_sha256 === request.bodySha256;
}
