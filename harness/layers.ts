// The layers: every top-level folder is one, and imports only point down (README, "Layout"). The rules
// live here so the layers test and `npm run structure` apply the same ones.
import { posix } from 'node:path';

/** Bottom to top. A folder may import from its own layer's folder or from any layer below it. */
export const LAYERS: readonly (readonly string[])[] = [
  ['domain'],
  ['ledger'],
  ['activities'],
  ['workflows'],
  ['client'],
  ['workers'],
  ['stack'],
  ['conformance'],
  ['harness'],
  ['scripts'],
  ['test'],
];

export const rank = (folder: string) => LAYERS.findIndex((layer) => layer.includes(folder));

/**
 * The layers the package ships (tsconfig.build.json's entries reach only these, and the operator CLI in scripts/):
 * `stack/` and `conformance/` ship because the conformance kit is part of the product. The rest is test-only.
 */
export const SHIPPED: readonly string[] = [
  'domain',
  'ledger',
  'activities',
  'workflows',
  'client',
  'workers',
  'stack',
  'conformance',
];

export interface ImportEdge {
  from: string;
  to: string;
  typeOnly: boolean;
}

/** Relative imports of a TypeScript source, resolved to repository paths. */
export function importsOf(file: string, source: string): ImportEdge[] {
  const edges: ImportEdge[] = [];
  const statement = /(?:^|\n)\s*(import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?'([^']+)'/g;
  for (const match of source.matchAll(statement)) {
    const spec = match[3] ?? '';
    if (!spec.startsWith('.')) continue;
    edges.push({ from: file, to: posix.normalize(posix.join(posix.dirname(file), spec)), typeOnly: Boolean(match[2]) });
  }
  for (const match of source.matchAll(/import\(\s*'(\.[^']+)'\s*\)/g)) {
    edges.push({ from: file, to: posix.normalize(posix.join(posix.dirname(file), match[1] ?? '')), typeOnly: false });
  }
  return edges;
}

/** Imports that run back up a layer, or sideways between two folders of one layer. */
export function upwardImports(edges: readonly ImportEdge[]): string[] {
  const top = (path: string) => path.split('/')[0] ?? '';
  return edges
    .filter(({ from, to }) => top(from) !== top(to))
    .filter(({ from, to }) => rank(top(to)) < 0 || rank(top(to)) >= rank(top(from)))
    .map(({ from, to }) => `${from} → ${to}`);
}

/** Workflow sandbox code: values only from the domain and the workflow folder; other layers as types only. */
export function bundleLeaks(edges: readonly ImportEdge[]): string[] {
  return edges
    .filter(({ from }) => from.startsWith('workflows/'))
    .filter(({ to, typeOnly }) => !typeOnly && !to.startsWith('workflows/') && !to.startsWith('domain/'))
    .map(({ from, to }) => `${from} → ${to}`);
}

/** Every source file reached from `entries` by relative imports (`read` gives a file's source, or null). */
export function reachedFrom(entries: readonly string[], read: (file: string) => string | null): string[] {
  const seen = new Set<string>();
  const queue = [...entries];
  while (queue.length) {
    const file = queue.pop() as string;
    if (seen.has(file)) continue;
    seen.add(file);
    const source = read(file);
    if (source === null) continue;
    for (const { to } of importsOf(file, source)) queue.push(to.replace(/\.js$/, '.ts'));
  }
  return [...seen];
}

/** Files the package would carry that are test-only: outside the shipped layers and the operator CLI. */
/** The operator CLI ships with the package: its entry, the request-file reader, its bulk decisions, and the audit it runs. */
const OPERATOR_CLI = ['scripts/effect-cli.ts', 'scripts/request-file.ts', 'scripts/bulk-decide.ts'];

export function unshippable(files: readonly string[]): string[] {
  return files.filter(
    (file) =>
      !SHIPPED.includes(file.split('/')[0] ?? '') && !OPERATOR_CLI.includes(file) && !file.startsWith('scripts/audit/'),
  );
}
