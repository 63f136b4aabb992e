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

/**
 * An object that carries our effect ID but another body: someone or something else changed or made it.
 * It is never evidence of absence; the verdict is inconclusive and a person decides.
 */
export function isForeignBody(object: StampedObject, request: ReadbackRequest): boolean {
  return object.metadata?.effect_id === request.effectId && object.body_sha256 !== request.bodySha256;
}

export function foreignBodyVerdict(method: string, ids: string[], scanned?: number) {
  return {
    outcome: 'inconclusive' as const,
    coverage: 'partial' as const,
    detail: {
      method,
      reason: `${ids.join(', ')} carr${ids.length === 1 ? 'ies' : 'y'} our effect ID but another body: changed or made by someone else; a person decides`,
      duplicates: ids,
      ...(scanned === undefined ? {} : { scanned }),
    },
  };
}
