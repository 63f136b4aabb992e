// A process whose wall clock disagrees with everyone else's: Debian's libfaketime (package `faketime`),
// preloaded into a child process with a fixed offset. Only the wall clock moves (Date.now(), timestamps);
// the monotonic clock Node's timers run on is left alone, so the process still waits as long as it means to.
import { existsSync } from 'node:fs';

const LIBRARY_PATHS = [
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/faketime/libfaketime.so.1',
];

/** The preloadable library, or null when the machine lacks it (scripts/setup.sh installs it). */
export function faketimeLibrary(): string | null {
  const configured = process.env.FAKETIME_LIBRARY;
  if (configured) return existsSync(configured) ? configured : null;
  return LIBRARY_PATHS.find((path) => existsSync(path)) ?? null;
}

/** The environment that makes a child process's wall clock run `offsetSeconds` ahead (negative: behind). */
export function skewedClockEnvironment(offsetSeconds: number): NodeJS.ProcessEnv {
  const library = faketimeLibrary();
  if (!library) throw new Error('libfaketime is not installed (apt-get install faketime; scripts/setup.sh does it)');
  return {
    LD_PRELOAD: library,
    FAKETIME: `${offsetSeconds >= 0 ? '+' : ''}${offsetSeconds}s`,
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
  };
}
