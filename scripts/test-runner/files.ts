// Which test files a run takes, and in what order. `npm test` takes every test/**/*.test.ts but the cluster
// suite's folder (test/cluster/, `npm run test:cluster`): a new file is picked up with no list to keep. Files
// start longest first, so the long ones do not end the run alone; the weights are each file's seconds in a
// recent run (durations.json, refreshed with `timings.ts --write-durations <log>`), and a file without one —
// a new file — starts first, as if it were the longest.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const projectRoot = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const DURATIONS_FILE = fileURLToPath(new URL('./durations.json', import.meta.url));
/** Files `npm test` leaves to another suite. */
export const OTHER_SUITES = ['test/cluster/'];

export function readDurations(): Record<string, number> {
  return existsSync(DURATIONS_FILE) ? (JSON.parse(readFileSync(DURATIONS_FILE, 'utf8')) as Record<string, number>) : {};
}

/** Every test file under test/, as project-relative paths. */
export function allTestFiles(root = projectRoot): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory() && entry.name !== 'node_modules') walk(path);
      else if (entry.isFile() && /\.test\.[cm]?ts$/.test(entry.name)) found.push(relative(root, path));
    }
  };
  walk(join(root, 'test'));
  return found.sort();
}

/** The files `npm test` runs: all of test/ but the other suites' folders. */
export function mainSuiteFiles(root = projectRoot): string[] {
  return allTestFiles(root).filter((file) => !OTHER_SUITES.some((folder) => file.startsWith(folder)));
}

/** Longest first by the recorded seconds; files with none first of all, in name order. */
export function scheduleOrder(files: string[], durations = readDurations()): string[] {
  const unknown = files.filter((f) => durations[f] === undefined);
  const known = files
    .filter((f) => durations[f] !== undefined)
    .sort((a, b) => (durations[b] ?? 0) - (durations[a] ?? 0));
  return [...unknown, ...known];
}
