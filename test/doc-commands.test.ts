// The commands docs/ gives a reader to type where running them here is a whole run of something long (the demo,
// the chaos suite, a cluster, the conformance kit, the test suite; one that starts nothing runs): each block marked "test/doc-commands.test.ts
// checks the block below" names, line by line, a command this project has (an npm script, a command of the
// package, a subcommand of the effect-ledger CLI, a file) with options that command declares, environment
// variables its code reads, and what a `temporal` line needs (a signal the workflow handles, a payload it
// accepts, the search attributes it sets). The commands that create things on a server are run instead
// (test/search-attributes.test.ts, test/nexus.test.ts).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { DECISION_KINDS, parseDecision } from '../domain/decisions.js';
import { EFFECT_SEARCH_ATTRIBUTES } from '../workers/search-attribute-check.js';
import { blockAfter, fencedBlocks, projectRoot, readDoc } from './support/doc-blocks.js';

const MARKER = 'test/doc-commands.test.ts checks the block below';
/** Blocks with a test of their own, below (found by what their marker says after the MARKER). */
const OWN_TESTS = ['the ledger', 'the alert rules'];

const pkg = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  scripts: Record<string, string>;
  bin: Record<string, string>;
};

function read(path: string): string {
  return readFileSync(join(projectRoot, path), 'utf8');
}

/** The project's TypeScript outside test/ (what reads an environment variable, declares a signal). */
const sources = [
  'domain',
  'ledger',
  'activities',
  'workflows',
  'client',
  'workers',
  'stack',
  'conformance',
  'harness',
  'scripts',
]
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
function checkCommand(command: string[]): string {
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
  return assert.fail(`${what}: test/doc-commands.test.ts has no check for this command; run it in a test instead`);
}

test('each command of a block docs/ marks as checked here is one the project has, with options it declares', () => {
  const checked: string[] = [];
  for (const name of readdirSync(join(projectRoot, 'docs')).filter((file) => file.endsWith('.md'))) {
    const page = `docs/${name}`;
    const markdown = readDoc(page);
    for (const block of fencedBlocks(markdown).filter((b) => b.comment?.startsWith(MARKER))) {
      if (OWN_TESTS.some((own) => block.comment?.startsWith(`${MARKER}: ${own}`))) continue;
      for (const command of commandsOf(block.code)) checked.push(`${page}:${block.line} ${checkCommand(command)}`);
    }
  }
  assert.ok(checked.length >= 30, checked.join('\n'));
});

test("docs/chaos-and-audit.md's line showing what seeds draw runs as shown (it starts nothing)", async () => {
  const block = blockAfter(readDoc('docs/chaos-and-audit.md'), `${MARKER}: the chaos script`);
  const line = block.split('\n').find((l) => l.includes('--draw')) ?? assert.fail('no --draw line');
  const { stdout } = await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', line], {
    cwd: projectRoot,
    timeout: 60_000,
  });
  const seeds = stdout.split('\n').filter((l) => l.startsWith('seed '));
  assert.deepEqual(
    seeds.map((l) => l.split(':')[0]),
    ['seed 10', 'seed 11', 'seed 12', 'seed 13', 'seed 14'],
    stdout,
  );
  for (const seed of seeds)
    for (const step of seed.replace(/^seed \d+: /, '').split('; ')) assert.match(step, /^revision-race\(/, seed);
});

test("docs/deploy.md's ledger commands: the owner's variable, the migrations' runtime role", () => {
  const commands = commandsOf(blockAfter(readDoc('docs/deploy.md'), `${MARKER}: the ledger`));
  assert.deepEqual(
    commands.map((c) => c[0]),
    ['createdb', 'DATABASE_OWNER_URL=postgres://effect_ledger_owner:…@db/effect_ledger', 'psql'],
  );
  assert.equal(checkCommand(commands[1] ?? []), 'effect-ledger-migrate');
  const migrations = readdirSync(join(projectRoot, 'ledger/migrations')).filter((f) => f.endsWith('.sql'));
  const runtimeRole = migrations.find((f) =>
    /CREATE ROLE effect_ledger_runtime\b/.test(read(`ledger/migrations/${f}`)),
  );
  assert.ok(runtimeRole, 'a migration creates effect_ledger_runtime');
  assert.match(
    commands[2]?.join(' ') ?? '',
    /CREATE ROLE effect_ledger_worker LOGIN PASSWORD '…' IN ROLE effect_ledger_runtime/,
  );
  assert.match(commands[0]?.join(' ') ?? '', /^createdb -O effect_ledger_owner effect_ledger$/);
});

test("docs/deploy.md's alert rules watch metrics the worker exports", () => {
  const rules = parse(blockAfter(readDoc('docs/deploy.md'), `${MARKER}: the alert rules`)) as {
    alert: string;
    expr: string;
  }[];
  assert.deepEqual(
    rules.map((rule) => rule.alert),
    ['EffectWaitingForAPerson', 'EffectStuck'],
  );
  for (const { alert, expr } of rules)
    for (const [metric] of expr.matchAll(/effect_ledger_\w+/g))
      assert.match(sources, new RegExp(`'${metric}'`), `${alert}: no metric ${metric} in the worker's code`);
});

test('the command check bites: an unknown script, an undeclared option, a signal the workflow refuses', () => {
  assert.throws(() => checkCommand(['npm', 'run', 'dmeo']), /no such script/);
  assert.throws(() => checkCommand(['npm', 'run', 'demo', '--', '--exitt']), /declares no --exitt/);
  assert.throws(() => checkCommand(['npx', 'effect-ledger', 'decied']), /no subcommand decied/);
  assert.throws(() => checkCommand(['effect-ledger', 'list', '--where', 'x']), /declares no --where/); // decide's
  assert.throws(() => checkCommand(['NO_SUCH_VARIABLE_X=1', 'npx', 'effect-ledger-worker']), /nothing reads/);
  assert.throws(
    () => checkCommand(['temporal', 'workflow', 'signal', '--name', 'approve-retry', '--input', '{"actor": "a"}']),
    /refuses the input/,
  );
  assert.throws(() => checkCommand(['rm', '-rf', '.data']), /no check for this command/);
  assert.deepEqual(
    commandsOf("# a comment\nnpm run demo -- --exit   # stop\nnpm run x -- --where 'A # B' \\\n  --yes\n"),
    [
      ['npm', 'run', 'demo', '--', '--exit'],
      ['npm', 'run', 'x', '--', '--where', 'A # B', '--yes'],
    ],
  );
});
