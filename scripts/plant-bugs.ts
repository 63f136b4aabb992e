// Plants known bugs, one at a time, in a scratch copy of the repository and runs the test files that
// should catch each; prints caught/survived per bug (and which tests caught it). A test suite that lets
// one of these through claims more than it checks.
//
//   npm run plant-bugs                      # every bug; stops at the first file that catches each
//   npm run plant-bugs -- --only conflict   # bugs whose name contains "conflict"
//   npm run plant-bugs -- --all-files       # run every relevant file even after one caught the bug
//   npm run plant-bugs -- --keep            # leave the scratch copies (their paths are printed)
//
// Each patch is a text match on a small snippet, so it survives a restructuring around it; a snippet
// that is not found exactly once fails the script loudly (exit 2) before anything runs: fix the patch.
import { spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

interface PlantedBug {
  name: string;
  /** Where the bug goes, relative to the repository root. */
  file: string;
  /** A snippet that must occur exactly once in `file`... */
  find: string;
  /** ...and what it becomes. */
  replace: string;
  /** Test files expected to catch it, cheapest first. */
  tests: string[];
}

export const BUGS: readonly PlantedBug[] = [
  {
    name: 'the send retried with default retries',
    file: 'workflows/activity-proxies.ts',
    find: 'retry: { maximumAttempts: 1 }',
    // Temporal's default policy: retry without limit, from one second, doubling.
    replace: "retry: { initialInterval: '1 second', backoffCoefficient: 2 }",
    tests: ['test/unknown-keyed.test.ts'],
  },
  {
    name: 'the key taken from the attempt number',
    file: 'activities/attempt-activities.ts',
    find: 'idempotencyKey: attempt.idempotencyKey,',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the planted code is itself a template literal
    replace: 'idempotencyKey: `${attempt.effectId}:attempt-${attempt.attemptNumber}`,',
    tests: ['test/approve.test.ts', 'test/unknown-keyed.test.ts'],
  },
  {
    name: 'readback accepts an object carrying our effect ID but another body',
    file: 'activities/destinations/exact-match.ts',
    find: 'object.metadata?.effect_id === request.effectId && object.body_sha256 === request.bodySha256',
    replace: 'object.metadata?.effect_id === request.effectId',
    tests: ['test/unknown-keyless.test.ts', 'test/unknown-keyed.test.ts'],
  },
  {
    name: 'the conflict check skipped',
    file: 'ledger/registration.ts',
    find: 'if (existing.fingerprint !== registration.fingerprint) {',
    replace: 'if (false && existing.fingerprint !== registration.fingerprint) {',
    tests: ['test/approve.test.ts', 'test/concurrent-approval.test.ts', 'test/bad-input.test.ts'],
  },
  {
    name: 'a timeout classified as "not sent"',
    file: 'activities/destinations/http-outcome.ts',
    find: "class: 'unknown',\n      detail: { reason: 'timed out waiting for the response",
    replace: "class: 'not_sent',\n      detail: { reason: 'timed out waiting for the response",
    tests: ['test/unknown-keyed.test.ts', 'test/unknown-keyless.test.ts'],
  },
  {
    name: 'the stale-decision refusal after a retry removed',
    file: 'workflows/reconcile.ts',
    find: 'if (resolution === RETRY && run.v3) {',
    replace: 'if (false && resolution === RETRY && run.v3) {',
    tests: ['test/unknown-episodes.test.ts'],
  },
  {
    name: 'stepsToGo() returns every step, settled ones included',
    file: 'workflows/effect-run.ts',
    find: 'return this.steps.filter((step) => !done.has(step));',
    replace: 'return [...this.steps];',
    tests: ['test/multi-step.test.ts'],
  },
  {
    name: 'the stale-decision refusal when a step settles removed',
    file: 'workflows/reconcile.ts',
    find: 'if (resolution !== RETRY && !isTerminal(resolution.stage) && run.decisions.length && run.decisionsBound()) {',
    replace: 'if (false) {',
    tests: ['test/unknown-episodes.test.ts'],
  },
  {
    name: 'a decision applied without its step, revision and episode checked',
    file: 'workflows/reconcile.ts',
    find: 'const unbound = run.staleness(queued);',
    replace: 'const unbound = undefined;',
    tests: ['test/unknown-episodes.test.ts'],
  },
  {
    name: 'absent judged on the worker’s clock after the read',
    file: 'activities/reconciliation-activities.ts',
    find: 'const began = clock.now;',
    replace: 'const began = new Date();',
    tests: ['test/in-flight-window.test.ts'],
  },
  {
    name: 'a revision started into the closing rejected run (no signal)',
    file: 'client/effect-ledger-client.ts',
    find: 'if (revised) {',
    replace: 'if (false && revised) {',
    tests: ['test/revisions.test.ts'],
  },
  {
    name: 'a lost answer not taken from the ledger that holds it',
    file: 'workflows/attempt.ts',
    find: 'if (made?.answer && patched(REVISION_HANDOVER_PATCH)) {',
    replace: 'if (false) {',
    tests: ['test/revisions.test.ts'],
  },
  {
    name: 'a JetStream 503 (stream full) classified as a refusal',
    file: 'activities/destinations/nats-jetstream.ts',
    find: "if (status === 503) return { class: 'not_sent', httpStatus: status, detail };",
    replace: "if (status === 503) return { class: 'rejected', httpStatus: status, detail };",
    tests: ['test/real-destinations.test.ts'],
  },
];

interface FileRun {
  file: string;
  code: number | null;
  failed: string[];
  seconds: number;
}

/** Names of failing tests in TAP output (leaf subtests, not their suites). */
function failingTests(tap: string): string[] {
  const failed: string[] = [];
  for (const line of tap.split('\n')) {
    const name = /^ +not ok \d+ - (.*)$/.exec(line)?.[1];
    if (name) failed.push(name.trim());
  }
  return failed;
}

function occurrences(text: string, snippet: string): number {
  return text.split(snippet).length - 1;
}

/** Throws (loudly, naming the bug and file) unless every bug's snippet occurs exactly once. */
function checkPatchSites(bugs: readonly PlantedBug[], root: string): void {
  const problems = bugs.flatMap((bug) => {
    const n = occurrences(readFileSync(join(root, bug.file), 'utf8'), bug.find);
    return n === 1 ? [] : [`"${bug.name}": ${bug.file} has ${n} occurrences of ${JSON.stringify(bug.find)}`];
  });
  if (problems.length > 0) {
    throw new Error(`patch site(s) not found exactly once; fix scripts/plant-bugs.ts:\n  ${problems.join('\n  ')}`);
  }
}

function scratchCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), 'plant-bug-'));
  const skip = new Set(['node_modules', '.git', 'artifacts', '.data', 'bin']);
  cpSync(ROOT, dir, {
    recursive: true,
    filter: (src) => {
      const rel = relative(ROOT, src);
      return rel === '' || !skip.has(rel.split('/')[0] ?? '');
    },
  });
  symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(dir, 'node_modules'));
  // The prebuilt binaries (Temporal CLI, Toxiproxy, Mailpit) the tests start: shared, never copied.
  if (existsSync(join(ROOT, 'bin'))) symlinkSync(realpathSync(join(ROOT, 'bin')), join(dir, 'bin'));
  return dir;
}

function runTestFile(dir: string, file: string): Promise<FileRun> {
  const started = Date.now();
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--test', '--test-concurrency=1', '--test-reporter=tap', file],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: process.env },
  );
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', () => {});
  return new Promise((resolve) =>
    child.once('close', (code) =>
      resolve({ file, code, failed: failingTests(out), seconds: Math.round((Date.now() - started) / 1000) }),
    ),
  );
}

const opts = new Command('plant-bugs')
  .option('--only <text>', 'only bugs whose name contains this')
  .option('--all-files', 'run every relevant file even after one caught the bug')
  .option('--keep', 'keep the scratch copies')
  .parse()
  .opts<{ only?: string; allFiles?: boolean; keep?: boolean }>();

const bugs = BUGS.filter((b) => !opts.only || b.name.includes(opts.only));
if (bugs.length === 0) {
  process.stderr.write(`no bug matches ${JSON.stringify(opts.only)}\n`);
  process.exit(2);
}
try {
  checkPatchSites(bugs, ROOT);
} catch (error) {
  process.stderr.write(`plant-bugs: ${(error as Error).message}\n`);
  process.exit(2);
}

const results: Array<{ bug: PlantedBug; caught: boolean; runs: FileRun[] }> = [];
for (const bug of bugs) {
  const dir = scratchCopy();
  try {
    const path = join(dir, bug.file);
    const text = readFileSync(path, 'utf8');
    if (occurrences(text, bug.find) !== 1) throw new Error(`patch site vanished in the copy: ${bug.file}`);
    writeFileSync(path, text.replace(bug.find, bug.replace));
    process.stdout.write(`\n# ${bug.name}  (${bug.file}; scratch copy ${dir})\n`);
    const runs: FileRun[] = [];
    for (const file of bug.tests) {
      const run = await runTestFile(dir, file);
      runs.push(run);
      const verdict = run.code === 0 ? 'passed (bug not seen)' : `FAILED: ${run.failed.length} test(s)`;
      process.stdout.write(`  ${file}: ${verdict} in ${run.seconds} s\n`);
      for (const name of run.failed) process.stdout.write(`    ✗ ${name}\n`);
      if (run.code !== 0 && !opts.allFiles) break;
    }
    results.push({ bug, caught: runs.some((r) => r.code !== 0), runs });
  } finally {
    if (!opts.keep) rmSync(dir, { recursive: true, force: true });
  }
}

process.stdout.write('\n| planted bug | verdict | caught by |\n| --- | --- | --- |\n');
for (const { bug, caught, runs } of results) {
  const by = runs
    .filter((r) => r.code !== 0)
    .map((r) => `${r.file}: ${r.failed.length ? r.failed.join('; ') : `exit ${r.code}`}`)
    .join(' / ');
  process.stdout.write(`| ${bug.name} | ${caught ? 'caught' : 'SURVIVED'} | ${by || '-'} |\n`);
}
const survived = results.filter((r) => !r.caught).length;
process.stdout.write(`\n${results.length - survived} caught, ${survived} survived\n`);
process.exitCode = survived === 0 ? 0 : 1;
