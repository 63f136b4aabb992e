// A destinations module, loaded by path: the kit reads its `conformance` export (the targets, by destination
// name) beside its destinations. A .ts module needs a loader of the caller's (node --import tsx); the kit
// itself runs as plain JavaScript.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ConformanceModule, ConformanceTargets } from './target.js';

export async function loadConformanceTargets(modulePath: string): Promise<ConformanceTargets> {
  const loaded = (await import(pathToFileURL(resolve(modulePath)).href)) as ConformanceModule & {
    default?: ConformanceModule;
  };
  const targets = loaded.conformance ?? loaded.default?.conformance;
  if (!targets || typeof targets !== 'object')
    throw new Error(
      `${modulePath} exports no \`conformance\`: name, per destination, how the kit reaches its server (docs/conformance.md)`,
    );
  return targets;
}
