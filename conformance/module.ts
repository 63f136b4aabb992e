// A destinations module for the kit, named as EFFECT_LEDGER_DESTINATIONS and `--destinations` name one (a path
// relative to the working directory, a package, several comma-separated, `built-in`): its destinations are its
// default export (or `destinations`), loaded and checked exactly as a worker loads them; the kit also reads its
// `conformance` export, the targets by destination name. A .ts module needs a loader of the caller's
// (node --import tsx); the kit itself runs as plain JavaScript.
import { BUILT_IN_DESTINATIONS, destinationModuleUrl, destinationSpecifiers } from '../client/destination-modules.js';
import type { KnownDestination } from '../domain/destination.js';
import { loadWorkerDestinations } from '../workers/hosted-destinations.js';
import type { ConformanceModule, ConformanceTargets } from './target.js';

export interface LoadedConformanceModule {
  /** Every destination the modules define (`built-in`: the package's). */
  destinations: KnownDestination[];
  /** The targets the modules' `conformance` exports name, merged. */
  targets: ConformanceTargets;
}

export async function loadConformanceModule(setting: string, cwd = process.cwd()): Promise<LoadedConformanceModule> {
  const specifiers = destinationSpecifiers(setting);
  if (specifiers.length === 0)
    throw new Error('name a destinations module (a path, a package, or several, comma-separated)');
  const destinations = await loadWorkerDestinations(specifiers, cwd);
  const targets: Record<string, ConformanceTargets[string]> = {};
  for (const specifier of specifiers) {
    if (specifier === BUILT_IN_DESTINATIONS) continue;
    // Loaded already (as the worker loads it): import() hands back the same module.
    const loaded = (await import(destinationModuleUrl(specifier, cwd))) as ConformanceModule & {
      default?: ConformanceModule;
    };
    const own = loaded.conformance ?? (Array.isArray(loaded.default) ? undefined : loaded.default?.conformance);
    if (own !== undefined && (typeof own !== 'object' || own === null))
      throw new Error(`${specifier}: its \`conformance\` export is not an object of targets by destination name`);
    Object.assign(targets, own);
  }
  if (Object.keys(targets).length === 0)
    throw new Error(
      `${setting} exports no \`conformance\`: name, per destination, how the kit reaches its server (docs/conformance.md)`,
    );
  return { destinations, targets };
}
