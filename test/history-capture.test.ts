// The capture command keeps working and the stored set is what today's code produces: re-capturing the
// quick, timing-insensitive paths takes the same path as the stored v<current> files. A change behind
// patched() that forgot its re-capture fails here. (The full set: npm run capture-histories -- --check.)
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { HISTORIES_DIR, historyFileName } from '../harness/histories/history-file.js';
import { EFFECT_WORKFLOW_VERSION } from '../workflows/version.js';

const entry = fileURLToPath(new URL('../scripts/capture-histories.ts', import.meta.url));

function captureCheck(args: string[]): Promise<{ code: number | null; stdout: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', entry, '--check', ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout })));
}

const QUICK_PATHS = [
  'happy-path',
  'rejected',
  'not-sent-retry',
  'unknown-readback-found',
  'unknown-readback-absent-retry',
  'unknown-human-approve-retry',
  'unknown-abandon',
  'malformed-decision-ignored',
  'open-awaiting-human',
  'multi-step-unknown-readback',
];

describe('capturing histories', () => {
  test('a re-capture of the quick paths takes the path each stored history records', async () => {
    const { code, stdout } = await captureCheck(['--only', QUICK_PATHS.join(',')]);
    assert.equal(code, 0, stdout);
    assert.match(stdout, /Every history took the path the stored one records/);
    for (const path of QUICK_PATHS)
      assert.match(
        stdout,
        new RegExp(`${historyFileName(EFFECT_WORKFLOW_VERSION, path).replace(/\./g, '\\.')}: \\d+ events`),
      );
  });

  test('--check notices a stored history that took another path', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'stored-'));
    try {
      // Stored "happy path" that is really the 503-then-retry history: one timer more.
      copyFileSync(
        join(HISTORIES_DIR, historyFileName(EFFECT_WORKFLOW_VERSION, 'not-sent-retry')),
        join(dir, historyFileName(EFFECT_WORKFLOW_VERSION, 'happy-path')),
      );
      const { code, stdout } = await captureCheck(['--only', 'happy-path', '--out', dir]);
      assert.equal(code, 1, stdout);
      assert.match(
        stdout,
        new RegExp(
          `${historyFileName(EFFECT_WORKFLOW_VERSION, 'happy-path').replace(/\./g, '\\.')}: step \\d+ is "[^"]+" now, "timer" stored`,
        ),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
