// A stuck or killed harness leaves nothing behind. What the harness starts as processes of their own —
// dev servers (Core spawns them; we find them by parent PID and port), worker processes, bench workers —
// are registered with one reaper process per harness process (reaper-process.ts), which stops them when
// our end of its stdin closes: when we exit, however we exit, SIGKILL included. (The simulator already
// exits when its own stdin closes.) Linux: processes are identified through /proc; elsewhere nothing happens.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parentPid, startTime } from './proc-stat.js';

// reaper-process.ts beside this source under tsx; the compiled reaper-process.js in the package, run without tsx.
const ownExtension = extname(fileURLToPath(import.meta.url));
const reaperEntry = fileURLToPath(new URL(`./reaper-process${ownExtension}`, import.meta.url));
const reaperArgs = ownExtension === '.ts' ? ['--import', 'tsx', reaperEntry] : [reaperEntry];
let reaper: ChildProcess | undefined;

/** Stops process `pid` once this process has gone, unless it has ended by then. */
export function reapWithUs(pid: number | undefined): void {
  // Off only to prove, in test/harness-cleanup.test.ts, that without the reaper the children do survive.
  if (process.env.EFFECT_LEDGER_HARNESS_REAPER === 'off') return;
  const started = pid === undefined ? null : startTime(pid);
  if (!started) return;
  if (!reaper) {
    // Detached: its own process group, so a signal to ours (Ctrl-C, a group kill) does not take it first.
    reaper = spawn(process.execPath, reaperArgs, {
      stdio: ['pipe', 'ignore', 'inherit'],
      detached: true,
    });
    // Neither the reaper nor its pipe keeps us alive; the pipe closes when we go, however we go.
    reaper.unref();
    (reaper.stdin as unknown as { unref(): void }).unref();
  }
  reaper.stdin?.write(`${pid} ${started}\n`);
}

/** Our child processes whose command line contains every one of `parts` (e.g. a dev server and its port). */
export function childProcessesMatching(...parts: string[]): number[] {
  if (!existsSync('/proc/self/stat')) return [];
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name) && parentPid(Number(name)) === process.pid)
    .map(Number)
    .filter((pid) => {
      try {
        const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
        return parts.every((part) => command.includes(part));
      } catch {
        return false;
      }
    });
}
