// 'effect-ledger/conformance': the conformance kit, for a user's own tests. runConformance runs destinations
// against their real servers through the fault matrix and says, per fault and step kind, what went wrong.
export type { Calibration } from './calibration.js';
export type { CellResult, ProbeResult, WorkflowResult } from './cells.js';
export {
  FAULT_DESCRIPTIONS,
  FAULTS,
  type FaultName,
  FURTHER_STEP,
  PROVIDER_FAULTS,
  type ProviderFault,
  STEP_KIND_DESCRIPTIONS,
  STEP_KINDS,
  type StepKind,
} from './faults.js';
export { type LoadedConformanceModule, loadConformanceModule } from './module.js';
export {
  type ConformanceOptions,
  type ConformanceReport,
  type DestinationReport,
  runConformance,
  type Violation,
} from './run.js';
export type { ConformanceModule, ConformanceServer, ConformanceTarget, ConformanceTargets } from './target.js';
