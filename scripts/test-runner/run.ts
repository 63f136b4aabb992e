// The test runner behind `npm test`, `npm run test:only` and `npm run test:cluster`: Node's own test runner
// (node:test's run(), TAP on stdout with its usual summary), each file in a process of its own with its own
// stack on free ports, several files at once — the suite waits on timers and servers far more than it
// computes — longest first (files.ts). As each file ends, a progress line on stderr; at the end, one
// `# el-file …` line per file (when it ran, what it cost; also appended to $EL_TIMINGS), the most PostgreSQL
// sessions at once (`# el-pg …`) and, run alone with more than one file, the per-file table.
//   node --import tsx --import ./scripts/test-runner/file-usage.mjs scripts/test-runner/run.ts [options] [files…]
// No files: every file of the main suite (files.ts). Options: --concurrency <n> (or EL_TEST_CONCURRENCY),
// --timeout <ms> per file, --test-name-pattern <regex> (repeatable; as `node --test` takes it).
import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { Transform } from 'node:stream';
import { run } from 'node:test';
import { tap } from 'node:test/reporters';
import { Command, InvalidArgumentError } from 'commander';
import postgres from 'postgres';
import { parentPid } from '../../stack/proc-stat.js';
import { locateTemporalCli } from '../../stack/temporal-cli.js';
import { mainSuiteFiles, projectRoot, scheduleOrder } from './files.js';
import { type FileTiming, fileLine, formatTimings } from './timings.js';

const positive = (raw: string) => {
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError('expected a positive integer');
  return n;
};

const opts = new Command('run-tests')
  .argument('[files...]', 'test files (default: the main suite)')
  .option(
    '--concurrency <n>',
    'files at once',
    positive,
    Number(process.env.EL_TEST_CONCURRENCY) || defaultConcurrency(),
  )
  // Stops a hung file, not a slow one: the chaos files' lanes run 420–550 s in a cold .ci/run (2 cores, load 10–20).
  .option('--timeout <ms>', 'per file', positive, 900_000)
  .option('--test-name-pattern <regex>', 'only tests whose name matches', (v, all: string[]) => [...all, v], [])
  .parse();
const { concurrency, timeout, testNamePattern } = opts.opts<{
  concurrency: number;
  timeout: number;
  testNamePattern: string[];
}>();

/**
 * One and a half files per core: each mostly waits (timers, polls, servers), but at two per core a .ci/run on 2
 * cores kept them 99 % busy for 21 minutes, and starved servers failed tests with nothing wrong (a versioned
 * worker's first poll waited 60 s on the dev server's deployment registration, and its effects sat unattempted).
 */
function defaultConcurrency(): number {
  return Math.min(8, Math.max(2, Math.round(1.5 * availableParallelism())));
}

const given = opts.args.map((file) => relative(projectRoot, resolve(file)));
const missing = given.filter((file) => !existsSync(resolve(projectRoot, file)));
if (missing.length) {
  process.stderr.write(`no such test file: ${missing.join(', ')}\n`);
  process.exit(2);
}
const files = scheduleOrder(given.length ? given : mainSuiteFiles());
if (files.length === 0) {
  process.stderr.write('no test files\n');
  process.exit(2);
}

// Each file's process appends its CPU figure here as it exits (file-usage.mjs, loaded through our execArgv).
const usageDir = mkdtempSync(join(tmpdir(), 'el-test-usage-'));
const usageLog = join(usageDir, 'usage.jsonl');
process.env.EL_TEST_USAGE = usageLog;
if (!process.execArgv.some((arg) => arg.includes('file-usage'))) {
  process.stderr.write('(run with --import ./scripts/test-runner/file-usage.mjs for per-file CPU figures)\n');
}
function cpuOf(file: string): number | undefined {
  if (!existsSync(usageLog)) return undefined;
  const lines = readFileSync(usageLog, 'utf8').trim().split('\n');
  return lines.map((line) => JSON.parse(line) as { file: string; cpuMs: number }).find((e) => e.file === file)?.cpuMs;
}

/**
 * The most sessions PostgreSQL had while the files ran, sampled every 2 s, against its max_connections:
 * files side by side each hold pools (ledger, workers, a cluster's services), and a full server refuses new
 * sessions ("too many clients"), which fails tests that have nothing wrong with them. `peak` counts every
 * session on the server; `ours`, those on databases claimed by our files' processes (stack/test-databases).
 */
function watchConnections(): { stop(): Promise<{ peak: number; ours: number; max: number } | undefined> } {
  const sql = postgres(process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', {
    max: 1,
    onnotice: () => {},
  });
  let peak = 0;
  let ours = 0;
  let max = 0;
  const descendsFromUs = (pid: number) => {
    for (let p: number | null = pid, hops = 0; p && p > 1 && hops < 20; p = parentPid(p), hops++) {
      if (p === process.pid) return true;
    }
    return false;
  };
  const sample = async () => {
    const rows = await sql<{ owner: string | null; n: number; max: number }[]>`
      SELECT substring(shobj_description(a.datid, 'pg_database') FROM ' owner \\S+ (\\d+) ') AS owner,
             count(*)::int AS n, current_setting('max_connections')::int AS max
      FROM pg_stat_activity a GROUP BY 1`;
    peak = Math.max(
      peak,
      rows.reduce((sum, r) => sum + r.n, 0),
    );
    ours = Math.max(
      ours,
      rows.filter((r) => r.owner && descendsFromUs(Number(r.owner))).reduce((s, r) => s + r.n, 0),
    );
    max = rows[0]?.max ?? max;
  };
  const timer = setInterval(() => void sample().catch(() => {}), 2000);
  void sample().catch(() => {});
  return {
    async stop() {
      clearInterval(timer);
      await sql.end({ timeout: 1 }).catch(() => {});
      return max ? { peak, ours, max } : undefined;
    },
  };
}

/** Our own child processes (the files'), from /proc. */
function childrenOfUs(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => parentPid(pid) === process.pid);
}

interface TestEvent {
  type: string;
  data: {
    file?: string;
    name?: string;
    nesting?: number;
    todo?: boolean | string;
    details?: { type?: string; duration_ms?: number; error?: unknown };
  };
}

/** A failed test, for the recap at the end of the output (a CI log is often read from its tail). */
interface Failure {
  file: string;
  name: string;
  message: string;
}
const failures: Failure[] = [];

/** The failure's own message: node:test wraps it (ERR_TEST_FAILURE) with the thrown error as its cause. */
function messageOf(error: unknown): string {
  const inner = (error as { cause?: unknown })?.cause ?? error;
  const text = inner instanceof Error ? `${inner.name}: ${inner.message}` : String(inner);
  const lines = text.split('\n');
  return lines.length > 40
    ? [...lines.slice(0, 40), `… (${lines.length - 40} more lines above in the log)`].join('\n')
    : text;
}

const timings = new Map<string, FileTiming>();
let failed = false;
let done = 0;
const runStart = Date.now();

/**
 * Passes the runner's events on to the TAP reporter, noting when each file starts and ends (a line on
 * stderr as it ends) and counting its tests. A file's results reach the reporter in the files' order, after
 * it ends, so its `# el-file` line, with the counts, comes at the end of the run.
 */
const observe = new Transform({
  objectMode: true,
  transform(event: TestEvent, _encoding, next) {
    this.push(event);
    const { file, name, nesting } = event.data ?? {};
    if (event.type === 'test:fail' && !event.data.todo) failed = true;
    if (!file) return next();
    const path = relative(projectRoot, file);
    if (event.type === 'test:fail' && !event.data.todo && event.data.details?.type !== 'suite') {
      failures.push({ file: path, name: name ?? '?', message: messageOf(event.data.details?.error) });
    }
    const timing = timings.get(path) ?? { file: path, start: runStart, end: 0, tests: 0, failed: 0 };
    timings.set(path, timing);
    const fileItself = name === file && nesting === 0;
    if (event.type === 'test:dequeue' && fileItself) timing.start = Date.now();
    if ((event.type === 'test:pass' || event.type === 'test:fail') && event.data.details?.type !== 'suite') {
      if (!fileItself) timing.tests++;
      if (event.type === 'test:fail') timing.failed++;
    }
    if (event.type === 'test:complete' && fileItself) {
      timing.end = Date.now();
      process.stderr.write(
        `▸ ${++done}/${files.length} ${path}: ${((timing.end - timing.start) / 1000).toFixed(1)} s\n`,
      );
    }
    next();
  },
  flush(finish) {
    for (const timing of timings.values()) {
      if (timing.end === 0) continue;
      const cpuMs = cpuOf(resolve(projectRoot, timing.file));
      if (cpuMs !== undefined) timing.cpuMs = cpuMs;
      const line = fileLine(timing);
      if (process.env.EL_TIMINGS) appendFileSync(process.env.EL_TIMINGS, `${line}\n`);
      this.push({ type: 'test:diagnostic', data: { nesting: 0, message: line } });
    }
    finish();
  },
});

// One build of a missing Temporal CLI here, not one per file started at once (stack/temporal-cli.ts).
if (process.env.EFFECT_LEDGER_TEMPORAL_TARGET !== 'cluster') locateTemporalCli();
process.stderr.write(`running ${files.length} test file(s), ${Math.min(concurrency, files.length)} at a time\n`);
const connections = watchConnections();
// Stopped (Ctrl-C, a cancelled CI job): the signal goes on to every file's process, whose reapers stop what each
// started; otherwise the files would run on with nobody reading them (run()'s own abort signal does not reach
// them on Node 20).
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    for (const pid of childrenOfUs()) {
      try {
        process.kill(pid, signal);
      } catch {
        // gone meanwhile
      }
    }
    rmSync(usageDir, { recursive: true, force: true });
    process.exit(signal === 'SIGINT' ? 130 : 143);
  });
}
const stream = run({
  files: files.map((file) => resolve(projectRoot, file)),
  concurrency,
  timeout,
  // A file ends when its tests have: a server or timer its failed set-up left behind does not hold it open
  // until the timeout (a test process does not exit on SIGTERM; the reaper stops what it started).
  forceExit: true,
  ...(testNamePattern.length ? { testNamePatterns: testNamePattern } : {}),
});
const reported = stream.pipe(observe).compose(tap);
reported.pipe(process.stdout);
await new Promise((done) => reported.once('end', done));

const pg = await connections.stop();
if (pg) {
  const line = `el-pg peak=${pg.peak} ours=${pg.ours} max=${pg.max}`;
  if (process.env.EL_TIMINGS) appendFileSync(process.env.EL_TIMINGS, `${line}\n`);
  process.stdout.write(`# ${line}\n`);
}
// What failed, again, last: the TAP above holds it in its place among hundreds of tests.
// A file's own entry (its name is its path) fails with its tests: shown only when none of its tests did.
const shown = failures.filter(
  (f) => !(resolve(projectRoot, f.file) === f.name && failures.some((o) => o.file === f.file && o !== f)),
);
if (shown.length) {
  const recap = shown.map((f) => `not ok: ${f.file}: ${f.name}\n${f.message.replace(/^/gm, '  ')}`).join('\n');
  process.stdout.write(`# ${shown.length} failed:\n${recap.replace(/^/gm, '# ')}\n`);
}
// Under npm test, .ci/run or test:cluster ($EL_TIMINGS set), their summary has the table; alone, ours.
const ended = [...timings.values()].filter((t) => t.end > 0);
if (ended.length > 1 && !process.env.EL_TIMINGS) {
  process.stderr.write(`\n${formatTimings({ phases: [], files: ended, machine: [], ...(pg ? { pg } : {}) })}\n`);
}
rmSync(usageDir, { recursive: true, force: true });
process.exitCode = failed ? 1 : 0;
