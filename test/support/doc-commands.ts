// The commands of docs/ blocks, checked without running them: each is a command this project has (an npm script,
// a command of the package, a subcommand of the effect-ledger CLI, a file), with options that command declares,
// environment variables its code reads, and what a `temporal workflow signal` line needs.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DECISION_KINDS, parseDecision } from '../../domain/decisions.js';
import { SHIPPED } from '../../harness/layers.js';
import { EFFECT_SEARCH_ATTRIBUTES } from '../../workers/search-attribute-check.js';
import { LOOK_ACTIVITY } from '../../workflows/contract.js';
import { projectRoot } from './doc-blocks.js';

const pkg = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  scripts: Record<string, string>;
  bin: Record<string, string>;
};

export function read(path: string): string {
  return readFileSync(join(projectRoot, path), 'utf8');
}

/** The project's TypeScript outside test/ (what reads an environment variable, declares a signal). */
export const sources = [...SHIPPED, 'harness', 'scripts']
  .flatMap((dir) =>
    readdirSync(join(projectRoot, dir), { recursive: true, encoding: 'utf8' }).map((f) => `${dir}/${f}`),
  )
  .filter((file) => file.endsWith('.ts'))
  .map(read)
  .join('\n');

/** A block's commands: continuation lines joined, comments and blank lines dropped, each split into words. */
export function commandsOf(block: string): string[][] {
  return block
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map(words)
    .filter((command) => command.length > 0);
}

/** A shell line's words, quotes removed, up to a comment. */
function words(line: string): string[] {
  const out: string[] = [];
  for (const m of line.matchAll(/'([^']*)'|"([^"]*)"|(#.*)|(\S+)/g)) {
    if (m[3] !== undefined && out.length === 0) return []; // a comment line
    if (m[3] !== undefined && /\s$/.test(line.slice(0, m.index))) break; // a comment after the command
    out.push(m[1] ?? m[2] ?? m[3] ?? m[4] ?? '');
  }
  return out;
}

/** The TypeScript (or shell script) an npm script runs, followed through `bash x.sh` to the `.ts` it execs. */
function scriptEntry(script: string): string {
  const line = pkg.scripts[script];
  assert.ok(line, `npm run ${script}: package.json has no such script`);
  const ts = /(?:tsx|node --import tsx(?: --import \S+)*) (\S+\.ts)/.exec(line)?.[1];
  if (ts) return ts;
  const sh = /^bash (\S+\.sh)/.exec(line)?.[1];
  assert.ok(sh, `npm run ${script}: "${line}" runs neither a .ts file nor a shell script`);
  const exec = /(?:exec|timed \w+) node --import tsx(?: --import \S+)* (\S+\.ts)/.exec(read(sh))?.[1];
  return exec ?? sh;
}

/** The TypeScript behind a command of the package (`effect-ledger-worker` is dist/workers/main.js). */
function binEntry(bin: string): string {
  const js = pkg.bin[bin];
  assert.ok(js, `${bin} is not a command of the package (package.json bin)`);
  return js.replace(/^dist\//, '').replace(/\.js$/, '.ts');
}

/**
 * Checks a program's arguments: a subcommand it declares (commander's `.command`), options it declares
 * (commander's `.option('--where <query>', …)`, `new Option(…)`) before its first subcommand or in that
 * subcommand's part.
 */
function checkArguments(entry: string, args: string[], what: string): void {
  const code = read(entry);
  const parts = code.split(/(?=\.command\(')/);
  const subcommands = parts.slice(1).map((part) => /^\.command\('([\w-]+)/.exec(part)?.[1]);
  let declaring = code;
  if (subcommands.length > 0 && args[0] !== undefined && !args[0].startsWith('-')) {
    const at = subcommands.indexOf(args[0]);
    assert.ok(at >= 0, `${what}: ${entry} has no subcommand ${args[0]} (${subcommands.join(', ')})`);
    declaring = `${parts[0]}${parts[at + 1]}`;
  }
  for (const arg of args) {
    const option = /^--[a-z][\w-]*/.exec(arg)?.[0];
    if (option)
      assert.match(
        declaring,
        new RegExp(`[oO]ption\\(\\s*['"\`](-\\w, )?${option}(?=[\\s'"\`<[,])`),
        `${what}: ${entry} declares no ${option}`,
      );
  }
}

/** Checks one command line; says what it was (a script, a command of the package, …). */
export function checkCommand(command: string[]): string {
  const what = command.join(' ');
  let rest = [...command];
  while (/^[A-Z_]+=/.test(rest[0] ?? '')) {
    const name = (rest[0] ?? '').split('=')[0] ?? '';
    if (name !== 'CI') assert.match(sources, new RegExp(`\\b${name}\\b`), `${what}: nothing reads ${name}`);
    rest = rest.slice(1);
  }
  const [program, ...args] = rest;
  if (program === 'npm' && args[0] === 'test') {
    checkArguments(scriptEntry('test'), args.slice(1), what);
    return 'npm test';
  }
  if (program === 'npm' && args[0] === 'install') {
    assert.equal(args[1], `${pkg.name}-${pkg.version}.tgz`, `${what}: npm pack makes ${pkg.name}-${pkg.version}.tgz`);
    return 'npm install of the packed tarball';
  }
  if (program === 'npm' && args[0] === 'run') {
    const script = args[1] ?? '';
    const passed = args[2] === '--' ? args.slice(3) : args.slice(2);
    assert.ok(passed.length === 0 || args[2] === '--', `${what}: options after -- reach the script`);
    checkArguments(scriptEntry(script), passed, what);
    return `npm run ${script}`;
  }
  if (program === 'npx' || program === 'effect-ledger') {
    const bin = program === 'npx' ? (args[0] ?? '') : program;
    checkArguments(binEntry(bin), program === 'npx' ? args.slice(1) : args, what);
    return bin;
  }
  if (program === 'bash') {
    assert.ok(existsSync(join(projectRoot, args[0] ?? '')), `${what}: no file ${args[0]}`);
    return `bash ${args[0]}`;
  }
  if (program === 'temporal' && args[0] === 'workflow' && args[1] === 'signal') {
    const option = (name: string) => args[args.indexOf(name) + 1] ?? '';
    const signal = option('--name');
    assert.ok(
      (DECISION_KINDS as readonly string[]).includes(signal) || signal === 'look-now',
      `${what}: no signal ${signal}`,
    );
    const decision = parseDecision(signal, JSON.parse(option('--input')));
    assert.ok(decision.ok, `${what}: the workflow refuses the input (${JSON.stringify(decision)})`);
    for (const [, name] of option('--query').matchAll(/(\w+) =/g))
      assert.ok(
        (EFFECT_SEARCH_ATTRIBUTES as readonly string[]).includes(name ?? ''),
        `${what}: no search attribute ${name}`,
      );
    return 'temporal workflow signal';
  }
  if (program === 'temporal' && args[0] === 'activity' && args[1] === 'reset') {
    const option = (name: string) => args[args.indexOf(name) + 1] ?? '';
    assert.equal(option('--activity-type'), LOOK_ACTIVITY, `${what}: the looks are ${LOOK_ACTIVITY}'s attempts`);
    for (const [, name] of option('--query').matchAll(/(\w+) =/g))
      assert.ok(
        (EFFECT_SEARCH_ATTRIBUTES as readonly string[]).includes(name ?? ''),
        `${what}: no search attribute ${name}`,
      );
    return 'temporal activity reset';
  }
  return assert.fail(`${what}: test/doc-commands.test.ts has no check for this command; run it in a test instead`);
}
