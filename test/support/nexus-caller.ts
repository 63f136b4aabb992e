// A team's own workflows, in their own namespace, approving effects through the endpoint `effect-ledger`
// (docs/nexus.md shows this file; test/nexus.test.ts runs it from its own bundle).
import { createNexusServiceClient } from '@temporalio/workflow';
import { type EffectApproval, effectLedgerNexusService } from '../../client/nexus-contract.js';

const effectLedger = () => createNexusServiceClient({ endpoint: 'effect-ledger', service: effectLedgerNexusService });

/** Approves the effect and waits for its result: recorded (with the object's ID), rejected or abandoned. */
export async function approveEffect(approval: EffectApproval) {
  const operation = await effectLedger().startOperation('approve', approval);
  // The token names the effect's run: a repeat approval of the same effect gets the same one.
  return { token: operation.token, result: await operation.result() };
}

export async function effectStatus(effectId: string) {
  return effectLedger().executeOperation('status', { effectId });
}
