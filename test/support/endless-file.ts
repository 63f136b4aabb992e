// A test file that never ends, for test/harness-cleanup.test.ts: it writes its PID where it is told, then
// waits — as a file stuck on a server that never answers would.
import { writeFileSync } from 'node:fs';
import { test } from 'node:test';

test('waits for ever', async () => {
  writeFileSync(process.env.EL_ENDLESS_PID_FILE ?? '/dev/null', String(process.pid));
  await new Promise(() => setInterval(() => {}, 60_000));
});
