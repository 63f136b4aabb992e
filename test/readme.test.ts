// The README is the front door: it stays short, and the backend service it shows compiles against the
// package's own API (the types `import … from 'effect-ledger'` gets), so a newcomer's first paste works. A block
// in the README or docs/ that says it is a tested file is that file, line for line.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { blocksThatAreFiles, codeOf, readDoc } from './support/doc-blocks.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const readme = readFileSync(join(root, 'README.md'), 'utf8');

/** The README's TypeScript block that imports the package: what a backend service writes. */
function serviceSnippet(markdown: string): string {
  const snippets = [...markdown.matchAll(/```ts\n([\s\S]*?)```/g)]
    .map((m) => m[1] ?? '')
    .filter((code) => code.includes("from 'effect-ledger'"));
  assert.equal(snippets.length, 1, "README.md shows one service importing 'effect-ledger'");
  return snippets[0] ?? '';
}

/** tsc's complaints about each file (name → code) as a module importing 'effect-ledger' (the sources). */
async function compileErrors(files: Record<string, string>): Promise<string> {
  mkdirSync(join(root, '.data'), { recursive: true });
  const dir = mkdtempSync(join(root, '.data', 'readme-check-')); // in the tree, for node_modules; git-ignored
  try {
    for (const [name, code] of Object.entries(files)) writeFileSync(join(dir, name), code);
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        extends: '../../tsconfig.json',
        compilerOptions: { paths: { 'effect-ledger': ['../../client/index.ts'] } },
        include: [],
        files: Object.keys(files),
      }),
    );
    const tsc = join(root, 'node_modules/typescript/bin/tsc');
    return await promisify(execFile)(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')]).then(
      () => '',
      (error: { stdout?: string; stderr?: string }) => `${error.stdout ?? ''}${error.stderr ?? ''}` || String(error),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('the README is a front door: about 200 lines at most', () => {
  const lines = readme.split('\n').length;
  assert.ok(lines <= 210, `README.md has ${lines} lines`);
});

test("the README's backend service compiles against the package's API", { timeout: 120_000 }, async () => {
  const service = serviceSnippet(readme);
  // One compile of two files: the service, and (to prove the check bites) the same with a misspelt method.
  const broken = service.replace('effects.approve(', 'effects.aprove(');
  assert.notEqual(broken, service);
  const errors = await compileErrors({ 'service.ts': service, 'broken.ts': broken });
  assert.match(errors, /broken\.ts.*aprove/);
  assert.doesNotMatch(errors, /service\.ts/, errors);
});

test("the README's own destination is the package test's, line for line, and its kit command runs that project's files", () => {
  const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)]
    .map((m) => m[1] ?? '')
    .filter((code) => code.includes("from 'effect-ledger/destinations'"));
  assert.equal(blocks.length, 1, 'README.md shows one destination module');
  // test/package.test.ts installs the packed package beside this file and runs it: approved, its reply lost,
  // read back, recorded, and through the conformance kit. The README cannot show one that does not do that.
  const consumer = readFileSync(join(root, 'test/consumer/payments-destination.mjs'), 'utf8');
  assert.equal(blocks[0]?.trim(), codeOf(consumer));
  const kit = /npx (effect-ledger-conformance) (\.\/[\w.-]+) (\w+)/.exec(readme);
  assert.ok(kit, 'README.md shows how to run the kit');
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { bin: Record<string, string> };
  assert.ok(pkg.bin[kit[1] ?? ''], `${kit[1]} is one of the package's commands`);
  const targets = readFileSync(join(root, 'test/consumer', kit[2] ?? ''), 'utf8');
  assert.match(targets, new RegExp(`\\b${kit[3]}: \\{`), `${kit[2]} names a target for ${kit[3]}`);
  assert.match(targets, /export \{ default \} from '\.\/payments-destination\.mjs'/);
});

test('each block in the README or docs/ that says it is a tested file is that file, line for line', () => {
  const pages = [
    'README.md',
    ...readdirSync(join(root, 'docs'))
      .filter((name) => name.endsWith('.md'))
      .map((name) => `docs/${name}`),
  ];
  const checked: string[] = [];
  for (const page of pages) {
    for (const { file, block, expected } of blocksThatAreFiles(readDoc(page))) {
      // The file without its opening comment; its imports of the package's own modules as a user writes them.
      assert.equal(block, expected, `${page}: the block said to be ${file} is not`);
      checked.push(`${page} ${file}`);
    }
  }
  assert.ok(checked.includes('README.md test/consumer/payments-destination.mjs'), checked.join('\n'));
  assert.ok(checked.includes('docs/your-own-destination.md test/consumer/plugin-worker.mjs'), checked.join('\n'));
});
