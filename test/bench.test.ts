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
      ...['--waiting', '5', '--look-effects', '2', '--look-interval-ms', '1000', '--look-window-s', '4'],
      // The lost posts' first look at once, not after social-feed's 60 s grace (twice: waiting, looks).
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
    // The client's default attempt is one activity per effect, as the bare workflow's; at most 12 events (issue 27).
    assert.equal(json.history.bare.activitiesPerEffect, 1);
    assert.equal(json.history.ledgered.activitiesPerEffect, 1);
    assert.ok(
      json.history.ledgered.eventsPerEffect <= 12,
      `${json.history.ledgered.eventsPerEffect} happy-path events`,
    );
    assert.match(stdout, /happy path: [\d.]+ history events per effect \(a bare workflow: [\d.]+\)/);
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
    // The approval rate of fresh effects (the quick default: 5) with none waiting, then with the 5 waiting.
    const rate = waiting.approvalRate;
    assert.deepEqual(rate.noneWaiting.ended, { recorded: rate.effects });
    assert.deepEqual(rate.whileWaiting.ended, { recorded: rate.effects });
    positive(rate.ratio, 'approval-rate ratio while effects wait');

    // Workflow v7: the looks of a waiting effect are retries of one activity and add nothing to its history; a wake
    // (a decision refused as stale, a look-now) does.
    const looks = json.looks;
    assert.equal(looks.effects, 2);
    assert.ok(looks.looks >= 2, `${looks.looks} looks in the window`);
    assert.ok(looks.attempts >= 1, `watchForObject attempts moved by ${looks.attempts}`);
    assert.equal(looks.events, 0, 'the looks added no history events');
    assert.equal(looks.eventsPerLook, 0);
    assert.equal(looks.bytesPerLook, 0);
    for (const kind of ['staleDecision', 'lookNow'] as const) {
      assert.equal(looks.wakes[kind].wakes, 2, `${kind} wakes measured`);
      positive(looks.wakes[kind].eventsPerWake, `${kind} events per wake`);
      positive(looks.wakes[kind].bytesPerWake, `${kind} bytes per wake`);
    }
    assert.ok(looks.wakes.lookNow.eventTypesPerWake.WORKFLOW_EXECUTION_SIGNALED >= 1, 'a look-now is a signal');
    // The client's look-now resets the waiting watch instead: a look, and no history event at all.
    assert.equal(looks.resetLookNow.resets, 2, 'both looks reset');
    assert.ok(looks.resetLookNow.looks >= 2, `${looks.resetLookNow.looks} looks after the resets`);
    assert.equal(looks.resetLookNow.events, 0, 'a look-now by reset writes no history');
    const day = looks.atDefaultSchedule;
    // v7 backs off while a person is awaited: at the social feed's cap, one look an hour; each adds no event.
    assert.equal(day.looksPerHourPerEffect, 1);
    assert.equal(day.historyEventsPerEffectPerDay, 0);
    assert.ok(Number.isFinite(day.workerCpuMsPerEffectPerHour), 'worker CPU per waiting effect per hour');
    assert.match(stdout, /looks: 2 effects awaiting a human/);

    const svg = readFileSync(join(out, 'bench.svg'), 'utf8');
    assert.match(svg, /^<svg [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    assert.match(svg, /latency/);
  });
});
