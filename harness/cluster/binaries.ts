// Finds the cluster's binaries — the Temporal server, its SQL schema tool and the standalone Web UI server —
// in this order: $TEMPORAL_SERVER_BIN / $TEMPORAL_SQL_TOOL_BIN / $TEMPORAL_UI_SERVER_BIN, the project-local
// bin/, else `go build` into bin/ from harness/temporal-binaries/ (the module that pins them at the versions
// the Temporal CLI is built with: after the CLI's build, Go's build cache serves most of their packages).
// Also finds the server module's PostgreSQL schema in the module cache. Run directly (`npm run
// cluster:build`), it builds what is missing and prints the paths.
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { GO_BUILD_FLAGS } from '../../stack/temporal-cli.js';
import { projectRoot } from '../../workers/config.js';

/** The Go module the harness builds every Temporal binary from (its go.mod holds the versions). */
export const TEMPORAL_BINARIES_MODULE = resolve(projectRoot, 'harness/temporal-binaries');

/** The version harness/temporal-binaries/go.mod requires of a module. */
export function requiredVersion(module: string): string {
  const goMod = readFileSync(join(TEMPORAL_BINARIES_MODULE, 'go.mod'), 'utf8');
  const version = new RegExp(`^\\s+${module.replaceAll('.', '\\.')} (v\\S+)$`, 'm').exec(goMod)?.[1];
  if (!version) throw new Error(`harness/temporal-binaries/go.mod does not require ${module}`);
  return version;
}

export const TEMPORAL_SERVER_VERSION = requiredVersion('go.temporal.io/server');

const localBin = resolve(projectRoot, 'bin');

interface BinarySpec {
  name: string;
  envVar: string;
  /** The package `go build` builds in the module. */
  pkg: string;
}

export const BINARIES = {
  server: { name: 'temporal-server', envVar: 'TEMPORAL_SERVER_BIN', pkg: 'go.temporal.io/server/cmd/server' },
  sqlTool: { name: 'temporal-sql-tool', envVar: 'TEMPORAL_SQL_TOOL_BIN', pkg: 'go.temporal.io/server/cmd/tools/sql' },
  uiServer: {
    name: 'temporal-ui-server',
    envVar: 'TEMPORAL_UI_SERVER_BIN',
    pkg: 'github.com/temporalio/ui-server/v2/cmd/server',
  },
} as const satisfies Record<string, BinarySpec>;

export type ClusterBinaries = Record<keyof typeof BINARIES, string>;

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function goBinary(): string {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && isExecutable(join(dir, 'go'))) return join(dir, 'go');
  }
  if (isExecutable('/usr/local/go/bin/go')) return '/usr/local/go/bin/go';
  throw new Error('Go is needed to build the Temporal server (none on PATH or at /usr/local/go/bin/go)');
}

const goEnv = () => ({ ...process.env, GOFLAGS: `${process.env.GOFLAGS ?? ''} -buildvcs=false`.trim() });

/** The binary if it is already there (env override or bin/), without building. */
export function findBinary(spec: BinarySpec): string | undefined {
  const fromEnv = process.env[spec.envVar];
  if (fromEnv) {
    if (!isExecutable(fromEnv)) throw new Error(`${spec.envVar}=${fromEnv} is not an executable file`);
    return fromEnv;
  }
  const local = join(localBin, spec.name);
  return isExecutable(local) ? local : undefined;
}

async function goBuild(spec: BinarySpec, log: (line: string) => void): Promise<string> {
  mkdirSync(localBin, { recursive: true });
  const scratch = mkdtempSync(join(localBin, `.build-${spec.name}-`));
  const started = Date.now();
  log(`building ${spec.name} (go build ${spec.pkg}; minutes on a cold Go cache)`);
  try {
    const output: string[] = [];
    const code = await new Promise<number | null>((done, fail) => {
      const child = spawn(goBinary(), ['build', ...GO_BUILD_FLAGS, '-o', join(scratch, spec.name), spec.pkg], {
        env: goEnv(),
        cwd: TEMPORAL_BINARIES_MODULE,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const keep = (chunk: Buffer) => output.push(chunk.toString());
      child.stdout.on('data', keep);
      child.stderr.on('data', keep);
      child.once('error', fail);
      child.once('exit', done);
    });
    if (code !== 0) throw new Error(`go build ${spec.pkg} failed (${code}):\n${output.join('').slice(-3000)}`);
    const target = join(localBin, spec.name);
    renameSync(join(scratch, spec.name), target);
    log(`built ${spec.name} in ${Math.round((Date.now() - started) / 1000)} s`);
    return target;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Every binary, building the missing ones one after the other (each finds the last one's packages cached). */
export async function ensureClusterBinaries(
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
  which: ReadonlyArray<keyof typeof BINARIES> = ['server', 'sqlTool', 'uiServer'],
): Promise<Partial<ClusterBinaries>> {
  const entries: [string, string][] = [];
  for (const key of which) entries.push([key, findBinary(BINARIES[key]) ?? (await goBuild(BINARIES[key], log))]);
  return Object.fromEntries(entries);
}

/**
 * The server module's PostgreSQL schema directory (…/schema/postgresql/v12), with `temporal/versioned` and
 * `visibility/versioned`: $TEMPORAL_SCHEMA_DIR, else the module cache (building the server downloads the
 * module; `go mod download` if it is gone).
 */
export function serverSchemaDir(): string {
  // Set where the binaries came from elsewhere (no Go here): the server release's schema/postgresql/v12.
  if (process.env.TEMPORAL_SCHEMA_DIR) return process.env.TEMPORAL_SCHEMA_DIR;
  const go = goBinary();
  const modCache = spawnSync(go, ['env', 'GOMODCACHE'], { encoding: 'utf8', env: goEnv() }).stdout.trim();
  const dir = join(modCache, `go.temporal.io/server@${TEMPORAL_SERVER_VERSION}/schema/postgresql/v12`);
  if (!existsSync(dir)) {
    const result = spawnSync(go, ['mod', 'download', `go.temporal.io/server@${TEMPORAL_SERVER_VERSION}`], {
      env: goEnv(),
      cwd: TEMPORAL_BINARIES_MODULE,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    if (result.status !== 0 || !existsSync(dir)) throw new Error(`the server's schema is not at ${dir}`);
  }
  return dir;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const started = Date.now();
  const binaries = await ensureClusterBinaries();
  for (const [key, path] of Object.entries(binaries)) process.stdout.write(`${key}: ${path}\n`);
  process.stdout.write(`schema: ${serverSchemaDir()}\n(${Math.round((Date.now() - started) / 1000)} s)\n`);
}
