// One way to supervise child processes: nothing the harness, the demo, the chaos run, the bench or the
// cluster script starts outlives the process that started it. Each such process has one reaper, a small
// process of its own (reaper-process.ts) that holds a pipe from us; every child is registered with it, and
// when our end of the pipe closes — we exited, however we exited, SIGKILL included — it stops every
// registered process still running. That also covers what we do not spawn ourselves: the dev server that
// Temporal's Core spawns is found by parent PID and port and registered the same way. Linux: processes are
// identified through /proc (a PID and its start time); elsewhere children are spawned but not reaped.
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { createWriteStream, existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parentPid, startTime } from './proc-stat.js';

// reaper-process.ts under tsx, reaper-process.js where this module is compiled.
const reaperEntry = fileURLToPath(
  new URL(`./reaper-process${extname(fileURLToPath(import.meta.url))}`, import.meta.url),
);
let reaper: ChildProcess | undefined;

/** Stops process `pid` once this process has gone, unless it has ended by then. */
export function reapWithUs(pid: number | undefined): void {
  // Off only to prove, in test/harness-cleanup.test.ts, that without the reaper the children do survive.
  if (process.env.EFFECT_LEDGER_HARNESS_REAPER === 'off') return;
  const started = pid === undefined ? null : startTime(pid);
  if (!started) return;
  if (!reaper) {
    const args = reaperEntry.endsWith('.ts') ? ['--import', 'tsx', reaperEntry] : [reaperEntry];
    // Detached: its own process group, so a signal to ours (Ctrl-C, a group kill) does not take it first.
    reaper = spawn(process.execPath, args, { stdio: ['pipe', 'ignore', 'inherit'], detached: true });
    // Neither the reaper nor its pipe keeps us alive; the pipe closes when we go, however we go.
    reaper.unref();
    (reaper.stdin as unknown as { unref(): void }).unref();
  }
  reaper.stdin?.write(`${pid} ${started}\n`);
}

export interface Supervised {
  child: ChildProcess;
  /** The last few KB it printed on stdout and stderr (for error messages). */
  output(): string;
  /** Resolves once it has exited, or failed to start (at once if it already has). */
  exited: Promise<void>;
  /** Sends `signal` (SIGTERM) and waits for the exit, with SIGKILL after `graceMs`. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<void>;
}

export interface SuperviseOptions extends Omit<SpawnOptions, 'stdio' | 'detached'> {
  /** Also append everything it prints to this file. */
  logFile?: string;
}

/**
 * Spawns a server or worker that never outlives us (registered with the reaper), with stdin closed and
 * its output kept for error messages. Read `child.stdout` / `child.stderr` for more.
 */
export function spawnSupervised(command: string, args: string[], options: SuperviseOptions = {}): Supervised {
  const { logFile, ...spawnOptions } = options;
  const child = spawn(command, args, { ...spawnOptions, stdio: ['ignore', 'pipe', 'pipe'] });
  reapWithUs(child.pid);
  let tail = '';
  const log = logFile ? createWriteStream(logFile, { flags: 'a' }) : undefined;
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString()).slice(-4000);
    log?.write(chunk);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const ended = () => child.exitCode !== null || child.signalCode !== null;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', (error) => {
      tail += `\n${String(error)}`;
      resolve();
    });
  });
  void exited.then(() => log?.end());
  return {
    child,
    output: () => tail,
    exited,
    async stop(signal = 'SIGTERM', graceMs = 10_000) {
      if (child.pid === undefined || ended()) return exited;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
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
