// Runs the `effect` CLI (or another script), or Temporal's own CLI, as its own process against a test stack.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { stackEnvironment } from '../../harness/local-stack.js';
import { locateTemporalCli } from '../../stack/temporal-cli.js';

/** What a CLI process needs of a stack: its ledger, Temporal address, namespace and task queue. */
export type CliStack = Parameters<typeof stackEnvironment>[0];

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runCli(
  stack: CliStack,
  args: string[],
  stdin?: string | Uint8Array,
  env: NodeJS.ProcessEnv = {},
): Promise<CliRun> {
  return runScript(stack, 'effect-cli.ts', args, stdin, env);
}

export function runScript(
  stack: CliStack,
  script: string,
  args: string[],
  stdin?: string | Uint8Array,
  env: NodeJS.ProcessEnv = {},
): Promise<CliRun> {
  const entry = fileURLToPath(new URL(`../../scripts/${script}`, import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', entry, ...args], {
    env: { ...stackEnvironment(stack), ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(stdin ?? '');
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

/** Temporal's CLI (the one the stack's dev server came from) with `args`, against the stack's server and namespace. */
export async function temporalCli(stack: CliStack, args: string[]): Promise<{ stdout: string; stderr: string }> {
  const cli = locateTemporalCli();
  assert.equal(cli.type, 'existing-path');
  return promisify(execFile)(cli.path, [...args, '--address', stack.env.address, '--namespace', stack.namespace]);
}
