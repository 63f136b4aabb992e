// 'effect-ledger/destinations': what a destinations module needs to define destinations, and nothing heavier —
// the destination API, the declarative HTTP destination, the classification rules every HTTP adapter shares, and
// the built-in contracts. A module importing only this is as light for backend code (which validates against its
// contracts) as for the worker (which connects it). The built-in adapters are 'effect-ledger/worker'.
import { canonicalJson, sha256Hex } from '../../ledger/fingerprint.js';

export {
  catalogOf,
  contractIssues,
  contractOf,
  type Destination,
  type DestinationCatalog,
  type DestinationConnection,
  type DestinationContext,
  type DestinationDefinition,
  DestinationDefinitionError,
  DestinationResponseError,
  defineContract,
  defineDestination,
  isDestination,
  type KnownDestination,
} from '../../domain/destination.js';
export {
  DEDUPE_MECHANISMS,
  type DedupeMechanism,
  type DestinationAdapter,
  type DestinationContract,
  type LookupResult,
  type PayloadSchema,
  type ReadbackDetail,
  type ReadbackRequest,
  type ReadbackResult,
  type ReleasedPackage,
  type ResponseDetail,
  type SendOutcome,
  type SendRequest,
  type StepPlan,
} from '../../domain/destination-contract.js';
export { KEY_SCOPES, type KeyScope } from '../../domain/idempotency-key.js';
export {
  builtInContracts,
  destinationContracts,
  exampleContracts,
  realDestinationContracts,
} from './built-in-contracts.js';
export { foreignBodyVerdict } from './exact-match.js';
export {
  type HttpConnection,
  type HttpDestinationSpec,
  type HttpIdempotencyKey,
  type HttpOperation,
  type HttpPlan,
  type HttpReadback,
  httpAdapter,
  httpContract,
  httpDestination,
  type KeyReadback,
  type ListingReadback,
  type ReferenceReadback,
  type StatusOverride,
  valueAt,
} from './http-destination.js';
export {
  bearer,
  classifyErrorStatus,
  classifyTransportError,
  isOutcome,
  type JsonExchange,
  postJson,
  retryAfterMs,
  sendJson,
} from './http-outcome.js';
export {
  getJson,
  objectIdFromUrl,
  ProviderRateLimitedError,
  ProviderReadError,
  type ReadBounds,
} from './http-read.js';
export { keyedApiDestination, keyedApiSpec } from './keyed-api.js';
export { socialFeedDestination, socialFeedSpec } from './social-feed.js';

/** The sha256 a release records for a body (of its canonical JSON): what an object must show to be ours. */
export function bodySha256Of(body: unknown): string {
  return sha256Hex(canonicalJson(body));
}
