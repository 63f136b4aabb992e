// The requests the kit hands an adapter, built exactly as the ledger's activities build them, so a probe
// meets the adapter as a real attempt and a real readback do: the send carries the plain effect ID and the
// step's released key (activities/attempt-activities.ts); the readback names the step by that key, its
// reference (activities/reconciliation-activities.ts, prepare).
import type {
  DestinationContract,
  ReadbackRequest,
  ReleasedPackage,
  SendRequest,
} from '../domain/destination-contract.js';
import { canonicalJson, sha256Hex } from '../ledger/fingerprint.js';

export interface Sample {
  operation: string;
  payload: Record<string, unknown>;
}

/** The package released for a step whose key is `reference` (client/effect-request.ts). */
export function releasedPackage(contract: DestinationContract, sample: Sample, reference: string): ReleasedPackage {
  return contract.buildPackage(reference, sample.operation, sample.payload);
}

export function sendRequest(
  effectId: string,
  reference: string,
  operation: string,
  pkg: ReleasedPackage,
  timeoutMs: number,
): SendRequest {
  return { effectId, idempotencyKey: reference, operation, package: pkg, timeoutMs };
}

export function readbackRequest(reference: string, pkg: ReleasedPackage, since: Date): ReadbackRequest {
  return {
    effectId: reference,
    idempotencyKey: reference,
    package: pkg,
    bodySha256: sha256Hex(canonicalJson(pkg.body)),
    since: since.toISOString(),
  };
}
