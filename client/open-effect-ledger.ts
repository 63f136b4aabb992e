// Backend code in a few lines: the Temporal target (TEMPORAL_* variables, an envconfig profile,
// temporal.yaml) and the ledger (DATABASE_URL, the runtime role) resolved as the worker resolves them.
//
//   const ledger = await openEffectLedger();
//   await ledger.effects.approve({ effectId: 'refund:A-1', destination: 'keyed-api', ... });
//   await ledger.close();
import type { Client } from '@temporalio/client';
import { builtInContracts } from '../activities/destinations/built-in-contracts.js';
import { databaseUrl, type Ledger, openLedger } from '../ledger/db.js';
import { closeTemporalClient } from './connection-close.js';
import { DESTINATIONS_ENV, loadDestinations } from './destination-modules.js';
import { EffectLedgerClient, type EffectLedgerClientOptions } from './effect-ledger-client.js';
import { connectTemporalClient, resolveTemporalTarget, type TemporalTarget } from './temporal-connection.js';

export interface OpenEffectLedgerOptions extends Partial<Omit<EffectLedgerClientOptions, 'client' | 'db'>> {
  /** Default DATABASE_URL. */
  databaseUrl?: string;
  /** Default resolveTemporalTarget(). */
  target?: TemporalTarget;
  /** Connect to Temporal on first use, so ledger-only reads answer while it is unreachable. */
  lazy?: boolean;
  // destinations (from EffectLedgerClientOptions): default, the modules EFFECT_LEDGER_DESTINATIONS names
  // (their contracts), else the built-ins.
}

export interface OpenedEffectLedger {
  effects: EffectLedgerClient;
  client: Client;
  ledger: Ledger;
  /**
   * Closes Temporal and the ledger. A call still waiting on Temporal (retrying through an outage) is rejected
   * first, a ServiceError caused by gRPC CANCELLED; the process is never left with a retry on a closed channel.
   */
  close(): Promise<void>;
}

export async function openEffectLedger(options: OpenEffectLedgerOptions = {}): Promise<OpenedEffectLedger> {
  const { databaseUrl: url = databaseUrl(), target = resolveTemporalTarget(), lazy, ...clientOptions } = options;
  const destinations =
    clientOptions.destinations ?? (await loadDestinations(process.env[DESTINATIONS_ENV], builtInContracts));
  const client = await connectTemporalClient(target, { lazy });
  const ledger = openLedger(url);
  const effects = new EffectLedgerClient({
    taskQueue: target.taskQueue,
    ...clientOptions,
    destinations,
    client,
    db: ledger.db,
  });
  return {
    effects,
    client,
    ledger,
    async close() {
      // Temporal first: what a call it cancels does next may still read or write the ledger.
      await closeTemporalClient(client).catch(() => {});
      await ledger.close();
    },
  };
}
