// Finds a Temporal CLI (dev server + Web UI in one binary), in this order:
//   1. $TEMPORAL_CLI, 2. `temporal` on PATH, 3. the project-local bin/temporal,
//   4. `go build github.com/temporalio/cli/cmd/temporal` into bin/ from harness/temporal-binaries/ (the module
//      that pins the CLI at temporal.yaml's cli.version; scripts/go-binaries.sh builds it the same way),
//   5. the Temporal SDK's own download (machines with internet).
// Run directly, it prints the path (building the CLI if needed). Tags from v1.6.0 on carry a `replace`
// directive, which Go ignores in a dependency: keep the CLI at v1.5.x unless that changes.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadTemporalConfig, projectRoot } from '../workers/config.js';

const localBin = resolve(projectRoot, 'bin');
const localCli = join(localBin, 'temporal');

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, name);
    if (dir && isExecutable(candidate)) return candidate;
  }
  return undefined;
}

function goBinary(): string | undefined {
  return onPath('go') ?? (isExecutable('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
}

/**
 * No debug information, in the compiler or the linker (scripts/go-binaries.sh says why): the same flags for
 * every Temporal binary, so that the CLI's build cache serves the cluster's.
 */
export const GO_BUILD_FLAGS = ['-gcflags=all=-dwarf=false', '-ldflags=-s -w'];

function goBuild(version: string): string | undefined {
  const go = goBinary();
  if (!go) return undefined;
  mkdirSync(localBin, { recursive: true });
  process.stderr.write(`Building the Temporal CLI ${version} with go build (minutes on a cold cache)...\n`);
  const scratch = mkdtempSync(join(localBin, '.build-temporal-'));
  try {
    const result = spawnSync(
      go,
      ['build', ...GO_BUILD_FLAGS, '-o', join(scratch, 'temporal'), 'github.com/temporalio/cli/cmd/temporal'],
      {
        env: { ...process.env, GOFLAGS: `${process.env.GOFLAGS ?? ''} -buildvcs=false`.trim() },
        stdio: ['ignore', 'inherit', 'inherit'],
        cwd: resolve(projectRoot, 'harness/temporal-binaries'),
      },
    );
    if (result.status !== 0) return undefined;
    renameSync(join(scratch, 'temporal'), localCli);
    return localCli;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** How the Temporal testing package should obtain the dev server binary. */
export type TemporalExecutable = { type: 'existing-path'; path: string } | { type: 'cached-download' };

export function locateTemporalCli(): TemporalExecutable {
  const fromEnv = process.env.TEMPORAL_CLI;
  if (fromEnv) {
    if (!isExecutable(fromEnv)) throw new Error(`TEMPORAL_CLI=${fromEnv} is not an executable file`);
    return { type: 'existing-path', path: fromEnv };
  }
  const found = onPath('temporal') ?? (isExecutable(localCli) ? localCli : undefined);
  if (found) return { type: 'existing-path', path: found };
  const built = goBuild(loadTemporalConfig().cli.version);
  if (built) return { type: 'existing-path', path: built };
  // Last resort, for machines with internet: the SDK downloads and caches a dev server itself.
  process.stderr.write('No Temporal CLI found and no Go toolchain: falling back to the SDK download.\n');
  return { type: 'cached-download' };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const executable = locateTemporalCli();
  process.stdout.write(`${executable.type === 'existing-path' ? executable.path : 'sdk-download'}\n`);
}
