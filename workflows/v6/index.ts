// The effect workflow as version 6 left it, frozen: the build that drains effects started before Worker
// Versioning (unversioned, behind ten patched() guards) runs this code, and test/histories' v1–v6 files replay
// against it (docs/versioning.md). Never edit it: a change here is a change to runs that are still open.
export { effectWorkflow } from './effect-workflow.js';
export { ledgerReconcilerWorkflow } from './ledger-reconciler.js';
