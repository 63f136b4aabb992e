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

/** A fenced code block of a page: its opening line (1-based), language, code and the HTML comment just above it. */
export interface FencedBlock {
  line: number;
  lang: string;
  code: string;
  /** The text of the comment on the lines just above the fence (no blank line between), without `<!--` `-->`. */
  comment: string | undefined;
}

/** Every fenced block of a page, indented ones (in a list item) included. */
export function fencedBlocks(markdown: string): FencedBlock[] {
  const lines = markdown.split('\n');
  const blocks: FencedBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/.exec(lines[i] ?? '');
    if (!open) continue;
    const fence = open[2] ?? '```';
    const start = i;
    const code: string[] = [];
    for (i++; i < lines.length && !new RegExp(`^\\s*${fence[0]}{${fence.length},}\\s*$`).test(lines[i] ?? ''); i++)
      code.push(lines[i] ?? '');
    blocks.push({ line: start + 1, lang: open[3] ?? '', code: code.join('\n'), comment: commentAbove(lines, start) });
  }
  return blocks;
}

function commentAbove(lines: string[], fence: number): string | undefined {
  const last = lines[fence - 1]?.trim() ?? '';
  if (!last.endsWith('-->')) return undefined;
  let first = fence - 1;
  while (first >= 0 && !(lines[first] ?? '').includes('<!--')) first--;
  if (first < 0) return undefined;
  const text = lines.slice(first, fence).join(' ');
  return text
    .slice(text.lastIndexOf('<!--') + 4, text.lastIndexOf('-->'))
    .replace(/\s+/g, ' ')
    .trim();
}

/** Languages whose blocks a reader copies and runs: such a block is a tested file or a test runs it. */
const COPYABLE = new Set([
  'ts',
  'typescript',
  'js',
  'javascript',
  'mjs',
  'sh',
  'bash',
  'shell',
  'yaml',
  'yml',
  'json',
  'sql',
]);
const CODE = new Set(['ts', 'typescript', 'js', 'javascript', 'mjs']);

/**
 * What is wrong with the page's blocks, one line each, naming the page and the block's line. Each block has a
 * comment just above it, one of:
 * - `<!-- The block below is <file> line for line … -->`: <file> exists (test/readme.test.ts compares them);
 *   TypeScript is a .ts file tsc compiles (under a directory tsconfig.json includes), JavaScript a .mjs or .js
 *   file a test names (`tests`: the test files; test/package.test.ts runs test/consumer/'s);
 * - `<!-- <test/x.test.ts> <verb> the block below … -->`: that test exists, reads this page (`readDoc('<page>')`,
 *   or `readDoc(page)` for each page of `readdirSync(join(projectRoot, 'docs'))`)
 *   and finds the block by that comment (its source holds a string that begins the comment: `<test/x.test.ts> <verb>…`);
 * - `<!-- not copied: <why> -->`: output or an illustration (sample output, a log, a diagram), never a
 *   TypeScript, JavaScript or shell block, or anything else a reader would paste.
 * `source(path)` reads a file of the project (undefined when there is none).
 */
export function blockProblems(
  page: string,
  markdown: string,
  source: (path: string) => string | undefined,
  tests: readonly string[] = [],
): string[] {
  const problems: string[] = [];
  const compiled = (JSON.parse(source('tsconfig.json') ?? '{}') as { include?: string[] }).include ?? [];
  for (const { line, lang, comment } of fencedBlocks(markdown)) {
    const at = `${page}:${line}: the \`\`\`${lang} block`;
    if (comment === undefined) {
      problems.push(
        `${at} has no comment above it saying which file it is, which test runs it, or why it is not copied`,
      );
      continue;
    }
    const file = /^The block below is (\S+) line for line/.exec(comment)?.[1];
    const test = /^(test\/[\w./-]+\.test\.ts) ([\w ]+?) the block below/.exec(comment);
    const notCopied = /^not copied: (.+)/.exec(comment)?.[1];
    if (file !== undefined) {
      if (source(file) === undefined) problems.push(`${at} is said to be ${file}, which does not exist`);
      else if (CODE.has(lang) && !(lang.startsWith('t') ? /\.ts$/ : /\.(mjs|js)$/).test(file))
        problems.push(`${at} is said to be ${file}, not a ${lang.startsWith('t') ? 'TypeScript' : 'JavaScript'} file`);
      else if (/\.ts$/.test(file) && !compiled.some((dir) => file.startsWith(`${dir}/`)))
        problems.push(`${at} is said to be ${file}, which tsc does not compile (tsconfig.json include)`);
      else if (/\.(mjs|js)$/.test(file) && !tests.some((test) => source(test)?.includes(file.split('/').pop() ?? file)))
        problems.push(`${at} is said to be ${file}, which no test runs (none of ${tests.length} test files names it)`);
    } else if (test) {
      const [said, testFile] = [test[0], test[1] ?? ''];
      const code = source(testFile);
      if (CODE.has(lang))
        problems.push(`${at} is code a reader pastes: make it a file (The block below is <file> line for line)`);
      else if (code === undefined) problems.push(`${at} is said to be run by ${testFile}, which does not exist`);
      else if (!(code.includes(`readDoc('${page}')`) || readsEveryPage(code)))
        problems.push(`${at}: ${testFile} never reads ${page}`);
      else if (!findsBy(code, testFile, comment))
        problems.push(`${at}: ${testFile} never finds the block by "${said}"`);
    } else if (notCopied !== undefined) {
      if (COPYABLE.has(lang)) problems.push(`${at} is something a reader copies, yet says it is not copied`);
    } else problems.push(`${at} has a comment above it that says neither a file, a test nor "not copied: <why>"`);
  }
  return problems;
}

/** Whether a test's source holds a string (in quotes) that begins the comment: what its blockAfter looks for. */
function findsBy(code: string, testFile: string, comment: string): boolean {
  const quoted = new RegExp(`['"\`](${testFile.replace(/[.]/g, '\\.')} [^'"\`]+)`, 'g');
  return [...code.matchAll(quoted)].some((m) => comment.startsWith(m[1] ?? '\u0000'));
}

/** Whether a test's source reads each page of docs/ (`readDoc(page)` over `readdirSync(join(projectRoot, 'docs'))`). */
function readsEveryPage(code: string): boolean {
  return code.includes("readdirSync(join(projectRoot, 'docs'))") && code.includes('readDoc(page)');
}
