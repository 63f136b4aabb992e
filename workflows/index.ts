// The workflow bundle's entry: only workflow code may be reachable from here.
export { effectWorkflow } from './effect-workflow.js';
export { ledgerReconcilerWorkflow } from './ledger-reconciler.js';
