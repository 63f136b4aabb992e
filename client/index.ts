// The package's main entry (`import { openEffectLedger } from 'effect-ledger'`): what backend code needs to
// approve effects and look at them, and the destination API's contract half (no adapter's dependencies load
// here). Defining destinations is 'effect-ledger/destinations'; the worker's building blocks are 'effect-ledger/worker'.
export {
  builtInContracts,
  destinationContracts,
  exampleContracts,
  realDestinationContracts,
} from '../activities/destinations/built-in-contracts.js';
export type { DecisionKind } from '../domain/decisions.js';
export {
  catalogOf,
  type Destination,
  type DestinationCatalog,
  type DestinationContext,
  DestinationDefinitionError,
  defineContract,
  defineDestination,
  type KnownDestination,
} from '../domain/destination.js';
export type {
  DedupeMechanism,
  DestinationAdapter,
  DestinationContract,
  PayloadSchema,
} from '../domain/destination-contract.js';
export { EFFECT_STAGES, type EffectStage, isTerminal } from '../domain/stages.js';
export { DEFAULT_DATABASE_URL, databaseUrl, type Ledger, openLedger, ownerDatabaseUrl } from '../ledger/db.js';
export {
  EffectConflictError,
  EffectNotFoundError,
  EffectNotRunningError,
  InvalidEffectRequestError,
} from '../ledger/errors.js';
export { migrateLedger } from '../ledger/migrate.js';
export { closeTemporalClient } from './connection-close.js';
export {
  BUILT_IN_DESTINATIONS,
  DESTINATIONS_ENV,
  DestinationModuleError,
  destinationSpecifiers,
  importDestinations,
  loadDestinations,
} from './destination-modules.js';
export {
  type ApprovalResult,
  EffectLedgerClient,
  type EffectLedgerClientOptions,
  type EffectReport,
  type RetryingActivity,
} from './effect-ledger-client.js';
export { type OpenEffectLedgerOptions, type OpenedEffectLedger, openEffectLedger } from './open-effect-ledger.js';
export type { ReconcilerPassOptions, ReconcilerPassReport } from './reconciler-pass.js';
export { loadTemporalConfig, type TemporalConfig } from './temporal-config.js';
export {
  connectTemporalClient,
  describeTarget,
  resolveTemporalTarget,
  type TemporalTarget,
  type TemporalTargetOptions,
} from './temporal-connection.js';
