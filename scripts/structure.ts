// The structure in figures (issue 9's closing note): lines per folder, the longest functions outside the
// tests, and imports that run back up a layer. `npm run structure`.
import { execSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import ts from 'typescript';
import { importsOf, LAYERS, upwardImports } from '../harness/layers.js';

const files = execSync("git ls-files '*.ts'", { encoding: 'utf8' })
  .trim()
  .split('\n')
  .filter((file) => !file.startsWith('test/histories/'));

const linesPerFolder = new Map<string, number>();
const functions: Array<{ lines: number; where: string }> = [];
const edges = [];
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  const folder = file.includes('/') ? (file.split('/')[0] ?? '') : '(root)';
  linesPerFolder.set(folder, (linesPerFolder.get(folder) ?? 0) + text.split('\n').length);
  edges.push(...importsOf(file, text));
  if (file.startsWith('test/')) continue;
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const visit = (node: ts.Node): void => {
    const named =
      ts.isFunctionDeclaration(node) ||
      ts.isMethodDeclaration(node) ||
      ((ts.isArrowFunction(node) || ts.isFunctionExpression(node)) && ts.isVariableDeclaration(node.parent));
    if (named) {
      const first = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const name = ts.isVariableDeclaration(node.parent)
        ? node.parent.name.getText()
        : (node as ts.FunctionDeclaration).name?.getText();
      functions.push({ lines: last - first + 1, where: `${file}:${first + 1} ${name ?? '(anonymous)'}` });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}

const order = LAYERS.flat();
const folders = [...linesPerFolder.keys()].sort((a, b) => order.indexOf(a) - order.indexOf(b));
process.stdout.write('lines per folder (.ts, without recorded histories)\n');
for (const folder of folders) process.stdout.write(`  ${folder.padEnd(12)} ${linesPerFolder.get(folder)}\n`);
process.stdout.write(`  ${'total'.padEnd(12)} ${[...linesPerFolder.values()].reduce((a, b) => a + b, 0)}\n`);
process.stdout.write('longest functions outside test/\n');
for (const f of functions.sort((a, b) => b.lines - a.lines).slice(0, 5)) {
  process.stdout.write(`  ${String(f.lines).padStart(4)}  ${f.where}\n`);
}
const workflow = functions.find((f) => f.where.endsWith(' effectWorkflow'));
if (workflow) process.stdout.write(`  effectWorkflow: ${workflow.lines} lines\n`);
const up = upwardImports(edges);
process.stdout.write(`imports that run back up a layer: ${up.length}\n`);
for (const edge of up) process.stdout.write(`  ${edge}\n`);
