// The bench's wait for a settled machine (harness/bench/steady.ts), on this machine's /proc/stat: the busy
// cores it reads lie between none and every core, it ends when three windows agree, and it gives up at its cap
// saying so (the figure after it is then marked as taken on a machine still settling).
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { describe, test } from 'node:test';
import { busyCores, untilSettled } from '../harness/bench/steady.js';

describe('the bench waits for a settled machine', () => {
  test('busy cores lie between none and every core', async () => {
    const cores = await busyCores(300);
    assert.ok(cores >= 0 && cores <= availableParallelism() + 0.01, `${cores} busy cores`);
  });

  test('three windows within the tolerance are settled', async () => {
    // Any three readings lie within every core of each other: settled at the third window, not before.
    const settle = await untilSettled({ windowMs: 100, toleranceCores: availableParallelism(), floorCores: -1 });
    assert.equal(settle.settled, true);
    assert.equal(settle.windows.length, 3);
  });

  test('a machine that never settles is reported at the cap', async () => {
    const settle = await untilSettled({ windowMs: 100, toleranceCores: -1, floorCores: -1, capMs: 500 });
    assert.equal(settle.settled, false);
    assert.ok(settle.seconds >= 0.5 && settle.windows.length >= 5, JSON.stringify(settle));
  });
});
