// The commands docs/ gives a reader to type where running them here is a whole run of something long (the demo,
// the chaos suite, a cluster, the conformance kit, the test suite): each block marked "test/doc-commands.test.ts
// checks the block below" is checked line by line (test/support/doc-commands.ts); a line that starts nothing
// runs. The commands that create things on a server are run instead (test/search-attributes.test.ts,
// test/nexus.test.ts).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { blockAfter, fencedBlocks, projectRoot, readDoc } from './support/doc-blocks.js';
import { checkCommand, commandsOf, read, sources } from './support/doc-commands.js';

const MARKER = 'test/doc-commands.test.ts checks the block below';
/** Blocks with a test of their own, below (found by what their marker says after the MARKER). */
const OWN_TESTS = ['the ledger', 'the alert rules'];

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
