// Code blocks of the docs that tests run or compare with files, found by the HTML comment just above them.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const projectRoot = fileURLToPath(new URL('../..', import.meta.url));

/** A docs page (path from the project root). */
export function readDoc(path: string): string {
  return readFileSync(join(projectRoot, path), 'utf8');
}

/** The code of the first fenced block after the first HTML comment containing `marker`. */
export function blockAfter(markdown: string, marker: string): string {
  const at = markdown.indexOf(marker);
  assert.ok(at >= 0 && markdown.lastIndexOf('<!--', at) > markdown.lastIndexOf('-->', at), `no comment says ${marker}`);
  const block = /-->[\s\S]*?\n```\w*\n([\s\S]*?)```/.exec(markdown.slice(at));
  assert.ok(block, `no code block follows the comment saying ${marker}`);
  return block[1] ?? '';
}

/**
 * The blocks a page says are a file line for line: `<!-- The block below is <path> line for line … -->`. Each
 * comes with the code a reader should see: the file without its opening comment (and shebang), its imports of
 * this repository's shipped modules written as the package's entries (`../../client/nexus-contract.js` is
 * `effect-ledger/nexus` when package.json exports it so).
 */
export function blocksThatAreFiles(markdown: string): { file: string; block: string; expected: string }[] {
  const marker = /<!-- The block below is (\S+) line for line/g;
  return [...markdown.matchAll(marker)].map((m) => {
    const file = m[1] ?? '';
    return {
      file,
      block: blockAfter(markdown.slice(m.index), m[0]).trim(),
      expected: asPackageImports(file, codeOf(readFileSync(join(projectRoot, file), 'utf8'))),
    };
  });
}

/** A source file without its shebang and opening comment: the code a reader copies. */
export function codeOf(source: string): string {
  return source
    .replace(/^#![^\n]*\n/, '')
    .replace(/^(\/\/[^\n]*\n)+/, '')
    .trim();
}

/** Relative imports of modules the package exports, as a user of the package writes them. */
function asPackageImports(file: string, code: string): string {
  const pkg = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as {
    name: string;
    exports: Record<string, string | { default: string }>;
  };
  const entries = new Map(
    Object.entries(pkg.exports).flatMap(([entry, target]) => {
      const js = typeof target === 'string' ? target : target.default;
      const source = /^\.\/dist\/(.+)\.js$/.exec(js)?.[1];
      return source ? [[source, entry === '.' ? pkg.name : `${pkg.name}/${entry.slice(2)}`] as const] : [];
    }),
  );
  const dir = join(projectRoot, file, '..');
  return code.replace(/from '(\.{1,2}\/[^']+)\.js'/g, (whole, specifier: string) => {
    const entry = entries.get(relative(projectRoot, join(dir, specifier)));
    return entry ? `from '${entry}'` : whole;
  });
}
