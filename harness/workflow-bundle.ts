// The effect workflow's code bundle, made once per version of its sources and kept in .data/: webpack costs
// every process that bundles about two CPU-seconds, and the suite starts dozens of stacks and worker
// processes, many at the same time. The name is a hash of everything the bundle can contain — the layers
// the workflow code may import, the bundler's options and the locked dependencies — so an edit makes a new
// bundle. Worker processes get its path in EFFECT_LEDGER_WORKFLOW_BUNDLE (workers/main.ts). Altered bundles
// (the replay test's, the chaos checker's variants) are made as before, never cached.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { tracingRequested } from '../client/tracing.js';
import { projectRoot } from '../workers/config.js';
import { buildIdOf, type DeploymentVersion } from '../workers/deployment.js';
import { bundleEffectWorkflows } from '../workers/effect-worker.js';
import type { WorkflowCode } from '../workers/workflows-path.js';

const SOURCES = [
  'domain',
  'ledger',
  'activities',
  'workflows',
  'workers/effect-worker.ts',
  'workers/workflow-tracing.ts',
  'package-lock.json',
];
const cacheDir = resolve(projectRoot, '.data/workflow-bundles');

function sourceFiles(path: string): string[] {
  const full = resolve(projectRoot, path);
  if (!existsSync(full)) return [];
  if (!statSync(full).isDirectory()) return [path];
  return readdirSync(full, { recursive: true, encoding: 'utf8' })
    .filter((name) => /\.(ts|js|cjs|mjs|json)$/.test(name) && statSync(join(full, name)).isFile())
    .map((name) => join(path, name))
    .sort();
}

/** The hash of the bundle's inputs: its file name. */
export function workflowBundleKey(): string {
  const hash = createHash('sha256');
  for (const file of SOURCES.flatMap(sourceFiles)) {
    hash.update(`${file}\0`);
    hash.update(readFileSync(resolve(projectRoot, file)));
  }
  return hash.digest('hex').slice(0, 16);
}

const made = new Map<string, Promise<string>>();

/**
 * The path of the bundle's code (made now if this version of the sources has none yet); `tracing`, with the
 * tracing interceptors (default: whether OTEL_* asks for traces; docs/tracing.md).
 */
export function workflowBundlePath(
  code: WorkflowCode = 'current',
  { tracing = tracingRequested() }: { tracing?: boolean } = {},
): Promise<string> {
  const variant = `${code}${tracing ? '-traced' : ''}`;
  let path = made.get(variant);
  if (!path) {
    path = makeBundle(code, tracing);
    made.set(variant, path);
  }
  return path;
}

async function makeBundle(workflowCode: WorkflowCode, tracing: boolean): Promise<string> {
  const key = `${workflowCode}${tracing ? '-traced' : ''}-${workflowBundleKey()}`;
  const code = join(cacheDir, `${key}.js`);
  const sourceMap = join(cacheDir, `${key}.js.map`);
  if (existsSync(code) && existsSync(sourceMap)) return code;
  const bundle = await bundleEffectWorkflows({ code: workflowCode, tracing });
  mkdirSync(cacheDir, { recursive: true });
  // Written aside and renamed: a process beside us that made the same bundle wins or loses whole.
  const tmp = `.${process.pid}.tmp`;
  writeFileSync(sourceMap + tmp, bundle.sourceMap);
  renameSync(sourceMap + tmp, sourceMap);
  writeFileSync(code + tmp, bundle.code);
  renameSync(code + tmp, code);
  return code;
}

/** The bundle itself, for a worker in this process. */
export async function loadWorkflowBundle(code: WorkflowCode = 'current'): Promise<WorkflowBundleWithSourceMap> {
  const path = await workflowBundlePath(code);
  return { code: readFileSync(path, 'utf8'), sourceMap: readFileSync(`${path}.map`, 'utf8') };
}

/** The deployment every stack's workers belong to, with the stack's task queue after it. */
export const STACK_DEPLOYMENT = 'effect-ledger';

/**
 * A stack's deployment: one per task queue, so stacks sharing a server (the chaos run's seeds) neither route each
 * other's effects (a deployment's current version is the whole deployment's) nor queue behind one deployment's
 * workflow, whose in-flight updates the server caps at 10.
 */
export function stackDeploymentName(taskQueue: string): string {
  // A digest of the task queue, not the queue itself: the server caps a deployment name's length (about 30
  // characters on 1.29: 'effect-ledger-chaos-key-from-run' is refused).
  return `${STACK_DEPLOYMENT}-${createHash('sha256').update(taskQueue).digest('hex').slice(0, 8)}`;
}

/** The version a worker running this bundle belongs to in a test stack. */
export function stackDeployment(bundleCode: string, taskQueue: string): DeploymentVersion {
  return { deploymentName: stackDeploymentName(taskQueue), buildId: buildIdOf(bundleCode) };
}

/** The same, for the bundle in a file (a worker process's EFFECT_LEDGER_WORKFLOW_BUNDLE). */
export function stackDeploymentOfFile(path: string, taskQueue: string): DeploymentVersion {
  return stackDeployment(readFileSync(path, 'utf8'), taskQueue);
}
