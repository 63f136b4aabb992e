// What a worker hosts: each destination it knows connected with the worker's environment and its credential.
// A destination that does not connect (not configured here) stays known: its effects wait, visibly, for a worker
// that hosts it. EFFECT_LEDGER_DESTINATIONS names the modules to load (client/destination-modules.ts).
import { builtInDestinations } from '../activities/destinations/built-in.js';
import type { Destinations } from '../activities/destinations/registry.js';
import { DESTINATIONS_ENV, loadDestinations } from '../client/destination-modules.js';
import {
  catalogOf,
  type Destination,
  type DestinationCatalog,
  type DestinationContext,
  isDestination,
  type KnownDestination,
} from '../domain/destination.js';
import type { DestinationAdapter } from '../domain/destination-contract.js';
import { destinationCredentials } from './config.js';

export interface HostedDestinations {
  /** The adapters this worker hosts, by name. */
  hosted: Destinations;
  /** Every destination it knows: what the reconciler's client validates the runs it starts against. */
  known: DestinationCatalog;
  /** Known here but not hosted (not configured in this worker's environment). */
  notHosted: string[];
}

/** Connects every destination with `env` (read-only) and its credential; bare contracts stay known, not hosted. */
export function hostDestinations(
  destinations: readonly KnownDestination[],
  env: DestinationContext['env'] = process.env,
): HostedDestinations {
  const known = catalogOf(destinations);
  const frozen = Object.freeze({ ...env });
  const hosted: Record<string, Destinations[string]> = {};
  for (const destination of destinations) {
    if (!isDestination(destination)) continue;
    const adapter = connectDestination(destination, frozen);
    if (adapter) hosted[destination.contract.name] = adapter;
  }
  return { hosted, known, notHosted: Object.keys(known).filter((name) => !Object.hasOwn(hosted, name)) };
}

/** One destination connected as a worker connects it: `env` (frozen) and its credential from there. */
export function connectDestination(
  destination: Destination,
  env: DestinationContext['env'],
): DestinationAdapter | undefined {
  const frozen = Object.isFrozen(env) ? env : Object.freeze({ ...env });
  const { name } = destination.contract;
  const credential = destinationCredentials([name], frozen as NodeJS.ProcessEnv)[name];
  return destination.connect({ env: frozen, ...(credential ? { credential } : {}) });
}

/** The destinations EFFECT_LEDGER_DESTINATIONS names (or `setting`), else the built-ins, for a worker to host. */
export function loadWorkerDestinations(
  setting: string | readonly string[] | undefined = process.env[DESTINATIONS_ENV],
  cwd = process.cwd(),
): Promise<KnownDestination[]> {
  return loadDestinations(setting, builtInDestinations, cwd);
}
