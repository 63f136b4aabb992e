// Runs the `effect` CLI as its own process against a test stack.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { stackEnvironment, type Stack } from './stack.js';

const entry = fileURLToPath(new URL('../../scripts/effect-cli.ts', import.meta.url));

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runCli(stack: Stack, args: string[], stdin?: string): Promise<CliRun> {
  const child = spawn(process.execPath, ['--import', 'tsx', entry, ...args], {
    env: stackEnvironment(stack),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(stdin ?? '');
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}
