// Where a run's time went. The set-up scripts, the test runner and .ci/run write marker lines, in the log and
// in $EL_TIMINGS:
//   el-phase <name> start=<epoch ms> end=<epoch ms> cpu=<s|->   a phase (set-up steps, builds, suites)
//   el-file <path> start=<epoch ms> end=<epoch ms> cpu=<ms|-> tests=<n> failed=<n>   a test file
//   el-machine <epoch ms> busy=<ticks> total=<ticks>   /proc/stat's CPU counters (all cores), at the ends
//   el-pg peak=<n> ours=<n> max=<n>   the most PostgreSQL sessions while a suite ran (all; on our files'
//     databases), and max_connections
// This turns them into the per-phase and per-file tables. Run directly on a log or timings file (markers are
// found anywhere in a line, so a log with prefixed lines works):
//   node --import tsx scripts/test-runner/timings.ts .data/ci-timings.log
//   node --import tsx scripts/test-runner/timings.ts --write-durations <log>   (refresh the scheduling weights)
import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { DURATIONS_FILE, readDurations } from './files.js';

export interface Phase {
  name: string;
  start: number;
  end: number;
  /** CPU seconds of the phase's own processes, where known. */
  cpuS?: number;
}

export interface FileTiming {
  file: string;
  start: number;
  end: number;
  cpuMs?: number;
  tests: number;
  failed: number;
}

export interface MachineSample {
  at: number;
  busy: number;
  total: number;
}

export interface Timings {
  phases: Phase[];
  files: FileTiming[];
  machine: MachineSample[];
  /** The most PostgreSQL sessions while a suite ran (all, and on our files' databases), max_connections. */
  pg?: { peak: number; ours?: number; max: number };
}

const fields = (text: string) => Object.fromEntries([...text.matchAll(/(\w[\w-]*)=(\S+)/g)].map((m) => [m[1], m[2]]));
const numberOrUndefined = (value: string | undefined) =>
  value === undefined || value === '-' || Number.isNaN(Number(value)) ? undefined : Number(value);

export function phaseLine(phase: Phase): string {
  return `el-phase ${phase.name.replaceAll(' ', '_')} start=${phase.start} end=${phase.end} cpu=${phase.cpuS ?? '-'}`;
}

export function fileLine(file: FileTiming): string {
  return `el-file ${file.file} start=${file.start} end=${file.end} cpu=${file.cpuMs === undefined ? '-' : Math.round(file.cpuMs)} tests=${file.tests} failed=${file.failed}`;
}

export function parseTimings(text: string): Timings {
  const timings: Timings = { phases: [], files: [], machine: [] };
  const seen = new Set<string>();
  for (const whole of text.split('\n')) {
    // A marker may show twice in a log (live, and in .ci/run's closing copy of them): once is enough.
    const from = whole.search(/el-(phase|file|machine|pg) /);
    if (from < 0 || seen.has(whole.slice(from))) continue;
    const line = whole.slice(from);
    seen.add(line);
    const [, phaseName, phaseFields] = /el-phase (\S+) (.*)$/.exec(line) ?? [];
    if (phaseName && phaseFields) {
      const f = fields(phaseFields);
      const start = Number(f.start);
      const end = Number(f.end);
      if (start && end) {
        timings.phases.push({ name: phaseName.replaceAll('_', ' '), start, end, cpuS: numberOrUndefined(f.cpu) });
      }
      continue;
    }
    const [, fileName, fileFields] = /el-file (\S+) (.*)$/.exec(line) ?? [];
    if (fileName && fileFields) {
      const f = fields(fileFields);
      const timing: FileTiming = {
        file: fileName,
        start: Number(f.start),
        end: Number(f.end),
        tests: Number(f.tests ?? 0),
        failed: Number(f.failed ?? 0),
      };
      const cpu = numberOrUndefined(f.cpu);
      if (cpu !== undefined) timing.cpuMs = cpu;
      // A file run twice in one log (a suite run again) counts once: its last run.
      timings.files = timings.files.filter((t) => t.file !== timing.file || t.start > timing.start);
      if (timing.start && timing.end) timings.files.push(timing);
      continue;
    }
    const [, peak, ours, max] = /el-pg peak=(\d+)(?: ours=(\d+))? max=(\d+)/.exec(line) ?? [];
    if (peak && max) {
      timings.pg = {
        peak: Math.max(Number(peak), timings.pg?.peak ?? 0),
        ...(ours ? { ours: Math.max(Number(ours), timings.pg?.ours ?? 0) } : {}),
        max: Number(max),
      };
      continue;
    }
    const [, at, machineFields] = /el-machine (\d+) (.*)$/.exec(line) ?? [];
    if (at && machineFields) {
      const f = fields(machineFields);
      timings.machine.push({ at: Number(at), busy: Number(f.busy), total: Number(f.total) });
    }
  }
  return timings;
}

const clock = (ms: number) => {
  const s = Math.max(0, Math.round(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
};
const seconds = (ms: number | undefined) => (ms === undefined ? '—' : `${(ms / 1000).toFixed(1)} s`);

function table(header: string[], rows: string[][], rightAligned: boolean[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    `  ${cells.map((c, i) => (rightAligned[i] ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0))).join('  ')}`.trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

export function formatTimings(timings: Timings, options: { topFiles?: number } = {}): string {
  const out: string[] = [];
  const starts = [
    ...timings.phases.map((p) => p.start),
    ...timings.files.map((f) => f.start),
    ...timings.machine.map((m) => m.at),
  ];
  const ends = [
    ...timings.phases.map((p) => p.end),
    ...timings.files.map((f) => f.end),
    ...timings.machine.map((m) => m.at),
  ];
  if (starts.length === 0) return 'no timing markers found';
  const zero = Math.min(...starts);
  const last = Math.max(...ends);
  if (timings.phases.length) {
    out.push('Phases (clock from the start of the run; CPU of the phase’s own processes where known):');
    out.push(
      table(
        ['phase', 'from', 'to', 'wall', 'cpu'],
        [...timings.phases]
          .sort((a, b) => a.start - b.start)
          .map((p) => [
            p.name,
            clock(p.start - zero),
            clock(p.end - zero),
            clock(p.end - p.start),
            p.cpuS === undefined ? '—' : `${Math.round(p.cpuS)} s`,
          ]),
        [false, true, true, true, true],
      ),
    );
  }
  if (timings.files.length) {
    const files = [...timings.files].sort((a, b) => b.end - b.start - (a.end - a.start));
    const shown = files.slice(0, options.topFiles ?? files.length);
    const wallSum = files.reduce((sum, f) => sum + (f.end - f.start), 0);
    const cpuSum = files.reduce((sum, f) => sum + (f.cpuMs ?? 0), 0);
    const span = Math.max(...files.map((f) => f.end)) - Math.min(...files.map((f) => f.start));
    const failed = files.filter((f) => f.failed > 0);
    out.push(
      `Test files: ${files.length} in ${clock(span)} (sum of their walls ${clock(wallSum)}, ${(wallSum / Math.max(span, 1)).toFixed(1)} at a time on average; CPU of their process trees ${Math.round(cpuSum / 1000)} s)${failed.length ? `; ${failed.length} with failures` : ''}, slowest first:`,
    );
    out.push(
      table(
        ['file', 'start', 'wall', 'cpu', 'tests', ''],
        shown.map((f) => [
          f.file,
          clock(f.start - zero),
          seconds(f.end - f.start),
          seconds(f.cpuMs),
          String(f.tests),
          f.failed ? `${f.failed} failed` : '',
        ]),
        [false, true, true, true, true, false],
      ),
    );
    if (shown.length < files.length) out.push(`  … and ${files.length - shown.length} more`);
  }
  const [first, lastSample] = [timings.machine[0], timings.machine.at(-1)];
  if (first && lastSample && lastSample.total > first.total) {
    const busy = lastSample.busy - first.busy;
    const total = lastSample.total - first.total;
    out.push(
      `Machine: CPUs busy ${Math.round((100 * busy) / total)}% of ${clock(lastSample.at - first.at)} (every process on it, ours or not: ${Math.round(busy / 100)} CPU-seconds).`,
    );
  }
  if (timings.pg) {
    out.push(
      `PostgreSQL: at most ${timings.pg.peak} sessions at once (every client's${timings.pg.ours === undefined ? '' : `; on our test databases at most ${timings.pg.ours}`}), of max_connections ${timings.pg.max}.`,
    );
  }
  out.push(`Total: ${clock(last - zero)}.`);
  return out.join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2);
  const write = args[0] === '--write-durations';
  const logs = write ? args.slice(1) : args;
  if (logs.length === 0) {
    process.stderr.write('usage: timings.ts [--write-durations] <log or timings file>...\n');
    process.exit(2);
  }
  const timings = parseTimings(logs.map((log) => readFileSync(log, 'utf8')).join('\n'));
  if (write) {
    const durations = { ...readDurations() };
    for (const f of timings.files) durations[f.file] = Math.round((f.end - f.start) / 1000);
    const sorted = Object.fromEntries(Object.entries(durations).sort(([a], [b]) => a.localeCompare(b)));
    writeFileSync(DURATIONS_FILE, `${JSON.stringify(sorted, null, 2)}\n`);
    process.stdout.write(`wrote ${Object.keys(sorted).length} files' seconds to ${DURATIONS_FILE}\n`);
  } else {
    process.stdout.write(`${formatTimings(timings)}\n`);
  }
}
