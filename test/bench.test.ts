// `npm run bench -- --quick` with tiny numbers, as a child process: the JSON it writes has every field,
// with sane values, and every effect ended where it should. No timing assertions: the machine is shared.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('../scripts/bench.ts', import.meta.url));

function runBench(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

const positive = (value: unknown, what: string) =>
  assert.ok(typeof value === 'number' && Number.isFinite(value) && value > 0, `${what} = ${String(value)}`);

describe('npm run bench --quick', () => {
  const out = mkdtempSync(join(tmpdir(), 'bench-test-'));
  after(() => rmSync(out, { recursive: true, force: true }));

  test('writes bench.json and bench.svg with every measurement', async () => {
    const effects = 20;
    const { code, stdout, stderr } = await runBench([
      '--quick',
      ...['--effects', String(effects), '--rounds', '1', '--concurrency', '5'],
      ...['--concurrency-levels', '2', '--worker-counts', '2', '--scaling-effects', '4'],
      ...['--sql-effects', '5', '--history-sample', '3'],
      ...['--waiting', '5', '--growth-effects', '2', '--growth-interval-ms', '1000', '--growth-window-s', '3'],
      // The lost posts' first readback at once, not after social-feed's 60 s grace (twice: waiting, growth).
      ...['--absence-grace-ms', '0'],
      ...['--out', out],
    ]);
    assert.equal(code, 0, `bench exited ${code}\n${stdout}\n${stderr.slice(-3000)}`);
    assert.match(stdout, /ratio ledgered\/bare effects\/s/);

    const json = JSON.parse(readFileSync(join(out, 'bench.json'), 'utf8'));
    const ends = { bare: 'completed', ledgered: 'recorded' } as const;
    for (const kind of ['bare', 'ledgered'] as const) {
      const s = json.summary[kind];
      positive(s.meanEffectsPerSecond, `${kind} effects/s`);
      positive(s.latencyMs.p50, `${kind} p50`);
      assert.ok(s.latencyMs.p95 >= s.latencyMs.p50 && s.latencyMs.p99 >= s.latencyMs.p95, `${kind} percentiles`);
      positive(s.historyEventsPerEffect, `${kind} history events`);
      positive(s.historyBytesPerEffect, `${kind} history bytes`);
      positive(s.workerPeakRssMiB, `${kind} worker RSS`);
      assert.deepEqual(s.ended, { [ends[kind]]: effects });
    }
    assert.ok(json.summary.ledgered.historyEventsPerEffect > json.summary.bare.historyEventsPerEffect);
    // v3's happy path is one activity per effect, as the bare workflow's.
    assert.equal(json.history.bare.activitiesPerEffect, 1);
    assert.equal(json.history.ledgered.activitiesPerEffect, 1);
    positive(json.ratio.mean, 'ratio');
    assert.equal(json.rounds.length, 1);
    positive(json.rounds[0].ratio, 'round ratio');

    const sql = json.sql;
    assert.deepEqual(sql.ended, { recorded: 5 });
    positive(sql.perEffect.total.statements, 'statements per effect');
    positive(sql.perEffect.approval.statements, 'approval statements per effect');
    positive(sql.perEffect.worker.statements, 'worker statements per effect');
    assert.ok(sql.perEffect.total.transactions >= 0 && sql.perEffect.total.implicitTransactions >= 0);
    assert.ok(
      sql.perEffect.total.transactions + sql.perEffect.total.implicitTransactions > 0,
      'some transaction per effect',
    );

    const scaled = [...json.scaling.byConcurrency, ...json.scaling.byWorkerProcesses];
    assert.equal(json.scaling.byConcurrency.length, 2);
    assert.equal(json.scaling.byWorkerProcesses.length, 2);
    for (const run of scaled) {
      positive(run.effectsPerSecond, `${run.phase} ${run.kind} effects/s`);
      assert.deepEqual(run.ended, { [ends[run.kind as 'bare' | 'ledgered']]: run.effects });
    }
    for (const run of json.scaling.byWorkerProcesses) {
      assert.equal(run.workerProcesses, 2);
      assert.equal(run.workerPeakRssMiB.length, 2);
    }

    const waiting = json.waiting;
    assert.equal(waiting.effects, 5);
    positive(waiting.ledgeredWorkers[0].rssWithWaitingMiB, 'RSS with effects waiting');
    positive(waiting.growth.historyBytesPerReadback, 'history bytes per readback');
    positive(waiting.growth.historyBytesPerEffectPerDay, 'history bytes per effect per day');
    // v3 backs off while a person is awaited: at the social feed's cap, one readback an hour.
    assert.equal(waiting.growth.readbacksPerHourPerEffect, 1);
    // The approval rate of fresh effects (the quick default: 5) with none waiting, then with the 5 waiting.
    const rate = waiting.approvalRate;
    assert.deepEqual(rate.noneWaiting.ended, { recorded: rate.effects });
    assert.deepEqual(rate.whileWaiting.ended, { recorded: rate.effects });
    positive(rate.ratio, 'approval-rate ratio while effects wait');

    const svg = readFileSync(join(out, 'bench.svg'), 'utf8');
    assert.match(svg, /^<svg [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    assert.match(svg, /latency/);
  });
});
