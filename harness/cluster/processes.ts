// Child processes that die with their parent. Go binaries cannot watch a stdin pipe the way our simulator
// does, so they are started through util-linux's `setpriv --pdeathsig`: the kernel signals the child when
// the process that spawned it dies, even by SIGKILL (a stuck test harness leaves nothing behind).
import { type ChildProcess, type SpawnOptions, spawn, spawnSync } from 'node:child_process';
import { createWriteStream } from 'node:fs';

let setpriv: string | null | undefined;

function setprivPath(): string | null {
  if (setpriv === undefined) {
    const probe = spawnSync('setpriv', ['--help'], { encoding: 'utf8' });
    setpriv = probe.status === 0 && probe.stdout.includes('--pdeathsig') ? 'setpriv' : null;
  }
  return setpriv;
}

/** The command line that runs `command` tied to us (as is where setpriv is missing). */
export function tiedCommand(
  command: string,
  args: string[],
  deathSignal: NodeJS.Signals = 'SIGTERM',
): [string, string[]] {
  const tie = setprivPath();
  return tie ? [tie, ['--pdeathsig', deathSignal.replace(/^SIG/, ''), '--', command, ...args]] : [command, args];
}

export interface TiedProcess {
  child: ChildProcess;
  /** The last few KB it printed (for error messages). */
  tail(): string;
  /** Resolves when it has exited (at once if it already has). */
  exited: Promise<void>;
  /** Signals it and waits for its exit (SIGKILL after `graceMs`). */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<void>;
}

export function spawnTied(
  command: string,
  args: string[],
  options: SpawnOptions & { logFile?: string; deathSignal?: NodeJS.Signals } = {},
): TiedProcess {
  const { logFile, deathSignal = 'SIGTERM', ...spawnOptions } = options;
  const [file, argv] = tiedCommand(command, args, deathSignal);
  const child = spawn(file, argv, { ...spawnOptions, stdio: ['ignore', 'pipe', 'pipe'] });
  let tail = '';
  const log = logFile ? createWriteStream(logFile, { flags: 'a' }) : undefined;
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString()).slice(-4000);
    log?.write(chunk);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    child.once('exit', () => {
      log?.end();
      resolve();
    });
    child.once('error', () => resolve());
  });
  return {
    child,
    tail: () => tail,
    exited,
    async stop(signal = 'SIGTERM', graceMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
