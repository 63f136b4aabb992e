// The Nexus service other namespaces and other languages approve effects through (docs/nexus.md), declared once:
// the worker's handlers (workers/nexus-service.ts) and TypeScript callers (`effect-ledger/nexus`) import it. A
// caller's workflow bundles it, so it imports nothing but nexus-rpc at run time.
import * as nexus from 'nexus-rpc';
import type { EffectResult } from '../workflows/contract.js';
import type { EffectReport } from './effect-ledger-client.js';
import type { EffectRequest } from './effect-request.js';

export const EFFECT_LEDGER_NEXUS_SERVICE = 'effect-ledger';

/** What `approve` takes: the request `EffectLedgerClient.approve` takes, as JSON. */
export type EffectApproval = EffectRequest;

export interface EffectStatusRequest {
  effectId: string;
}

/** A value as it crosses as JSON: dates are ISO strings, undefined fields are absent. */
export type JsonOf<T> = T extends Date
  ? string
  : T extends (infer E)[]
    ? JsonOf<E>[]
    : T extends object
      ? { [K in keyof T]: JsonOf<T[K]> }
      : T;

/** What `status` answers: what `EffectLedgerClient.status` answers (the ledger's trail, the run's live view). */
export type EffectStatusReport = JsonOf<EffectReport>;

export const effectLedgerNexusService = nexus.service(EFFECT_LEDGER_NEXUS_SERVICE, {
  /**
   * Approves the effect and completes with its result (recorded, rejected or abandoned): backed by the effect's
   * workflow, whose ID is the effect ID. A repeat joins the same run, or answers at once once the effect ended; the
   * same effect ID with other parameters, or a request the destination's contract refuses, fails the operation.
   */
  approve: nexus.operation<EffectApproval, EffectResult>(),
  /** The effect's ledger trail and its run's live view, at once. */
  status: nexus.operation<EffectStatusRequest, EffectStatusReport>(),
});
