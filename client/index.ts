// The package's main entry (`import { openEffectLedger } from 'effect-ledger'`): what backend code needs to
// approve effects and look at them. The worker's building blocks are 'effect-ledger/worker'.
export { destinationContracts } from '../activities/destinations/registry.js';
export type { DecisionKind } from '../domain/decisions.js';
export { EFFECT_STAGES, type EffectStage, isTerminal } from '../domain/stages.js';
export { DEFAULT_DATABASE_URL, databaseUrl, type Ledger, openLedger, ownerDatabaseUrl } from '../ledger/db.js';
export {
  EffectConflictError,
  EffectNotFoundError,
  EffectNotRunningError,
  InvalidEffectRequestError,
} from '../ledger/errors.js';
export { migrateLedger } from '../ledger/migrate.js';
export {
  type ApprovalResult,
  EffectLedgerClient,
  type EffectLedgerClientOptions,
  type EffectReport,
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
