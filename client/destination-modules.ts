// A user's destinations, loaded from modules named by path or package: `EFFECT_LEDGER_DESTINATIONS=./destinations.mjs`
// (several comma-separated; `built-in` names the destinations this package ships). A module's default export is an
// array of destinations (defineDestination, httpDestination) or bare contracts; a named export `destinations` works
// too. Unset, the built-ins. The same variable serves the worker (which connects them), the CLI and backend code
// (which validate against their contracts).
import { statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  catalogOf,
  contractIssues,
  DestinationDefinitionError,
  isDestination,
  type KnownDestination,
} from '../domain/destination.js';

export const DESTINATIONS_ENV = 'EFFECT_LEDGER_DESTINATIONS';

/** Names the destinations this package ships, among the modules. */
export const BUILT_IN_DESTINATIONS = 'built-in';

/** A destinations module that cannot be loaded, or exports no destinations: which, and why. Nothing is loaded. */
export class DestinationModuleError extends Error {
  override readonly name = 'DestinationModuleError';
  constructor(
    readonly specifier: string,
    reason: string,
  ) {
    super(`destinations module ${specifier}: ${reason}`);
  }
}

/** The modules a setting names, in order: comma-separated, blanks ignored. */
export function destinationSpecifiers(setting: string | undefined): string[] {
  return (setting ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/**
 * A path (relative to `cwd`) or a file URL as itself; a package name as `cwd`'s node_modules resolve it. A bare
 * `dir/file.mjs` that is a file under `cwd` is that file (as `node dir/file.mjs` runs it), not a package `dir`.
 */
export function destinationModuleUrl(specifier: string, cwd = process.cwd()): string {
  if (specifier.startsWith('file:')) return specifier;
  if (isAbsolute(specifier) || specifier.startsWith('.') || isFile(resolve(cwd, specifier)))
    return pathToFileURL(resolve(cwd, specifier)).href;
  try {
    return pathToFileURL(createRequire(join(cwd, 'package.json')).resolve(specifier)).href;
  } catch {
    return specifier; // an ESM-only package: let import() resolve it
  }
}

const isFile = (path: string) => statSync(path, { throwIfNoEntry: false })?.isFile() === true;

/** The destinations one module exports, each checked (a destination, or a contract). */
export async function importDestinations(specifier: string, cwd = process.cwd()): Promise<KnownDestination[]> {
  let loaded: Record<string, unknown>;
  try {
    loaded = (await import(destinationModuleUrl(specifier, cwd))) as Record<string, unknown>;
  } catch (error) {
    if (error instanceof DestinationDefinitionError) throw error;
    throw new DestinationModuleError(specifier, `cannot be loaded (${(error as Error).message})`);
  }
  const list = Array.isArray(loaded.default) ? loaded.default : loaded.destinations;
  if (!Array.isArray(list))
    throw new DestinationModuleError(
      specifier,
      'exports no destinations: its default export (or `destinations`) must be an array of defineDestination(…) results',
    );
  return list.map((entry: unknown, i) => {
    if (isDestination(entry)) return entry;
    const issues = contractIssues(entry);
    if (issues.length)
      throw new DestinationModuleError(
        specifier,
        `entry ${i} is neither a destination (defineDestination) nor a contract: ${issues.join('; ')}`,
      );
    return entry as KnownDestination;
  });
}

/**
 * The destinations the setting names (`built-in` for `builtIn`; nothing: `builtIn`), checked together: every
 * contract sound, every name once. Throws DestinationModuleError or DestinationDefinitionError.
 */
export async function loadDestinations<T extends KnownDestination>(
  setting: string | readonly string[] | undefined,
  builtIn: readonly T[],
  cwd = process.cwd(),
): Promise<(T | KnownDestination)[]> {
  const specifiers = typeof setting === 'string' || setting === undefined ? destinationSpecifiers(setting) : setting;
  if (specifiers.length === 0) return [...builtIn];
  const lists = await Promise.all(
    specifiers.map((s) => (s === BUILT_IN_DESTINATIONS ? Promise.resolve([...builtIn]) : importDestinations(s, cwd))),
  );
  const all = lists.flat();
  catalogOf(all);
  return all;
}
