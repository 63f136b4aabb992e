// The client validates approvals against the contracts it knows. Until it takes its destinations as an option
// (issue 18, item 1), the kit lends the contracts of a run — its carriers, and targets the registry does not
// hold — to the registry the client reads, for the run only.
import { destinationContracts } from '../activities/destinations/registry.js';
import type { DestinationContract } from '../domain/destination-contract.js';

/** Registers the contracts; the function returned puts the registry back as it was. */
export function lendContracts(contracts: readonly DestinationContract[]): () => void {
  const registry = destinationContracts as Record<string, DestinationContract>;
  const before = new Map(
    contracts.map((c) => [c.name, Object.hasOwn(registry, c.name) ? registry[c.name] : undefined]),
  );
  for (const contract of contracts) registry[contract.name] = contract;
  return () => {
    for (const [name, previous] of before) {
      if (previous) registry[name] = previous;
      else delete registry[name];
    }
  };
}
