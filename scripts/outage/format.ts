// The outage's table: per phase, effects by stage, worker RSS and CPU, the provider's reads a second against its
// limit, 429s; then parking and drain times, the drain ratio, and the per-effect costs (per look, per wake, per day).
import type { DrainRatio, OutageReport, RequestCount } from './run.js';

const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

const counted = (n: RequestCount) => `${n.letThrough}${n.limited ? ` (+${n.limited} answered 429)` : ''}`;

/** One drain window: its time against the least its requests let through take at the rates, and the 429s apart. */
function drainLine(d: DrainRatio): string {
  const what = d.from === 'provider back' ? 'end to end, from the provider back' : 'from the last look-now signal';
  if (!Number.isFinite(d.ratio))
    return `drain ratio (${what}): no request in ${s(d.drainSeconds * 1000)}, all had settled`;
  return (
    `drain ratio ${d.ratio.toFixed(2)} (${what}): ${s(d.drainSeconds * 1000)} against ${s(d.boundSeconds * 1000)} at ` +
    `the rates (bound by ${d.boundBy}); requests let through ${Object.entries(d.requestsByDestination)
      .map(([name, n]) => `${name} ${counted(n)} = ${(d.secondsAtDeclaredRate[name] ?? 0).toFixed(1)} s`)
      .join(', ')} at the declared rates; the provider ${counted(d.providerRequests)} = ` +
    `${d.secondsAtProviderLimit.toFixed(1)} s at its limit`
  );
}

export function formatOutage(report: OutageReport): string {
  const { options } = report;
  const rows = report.phases.map((p) => [
    p.name,
    s(p.endedMs - p.startedMs),
    Object.entries(p.stages)
      .map(([stage, n]) => `${stage} ${n}`)
      .join(', '),
    p.peakRssMiB.join(' / '),
    p.meanCpuPercent.join(' / '),
    `${p.meanReadsPerSecond.toFixed(1)} (peak ${p.peakReadsPerSecond})`,
    Object.entries(p.peakReadsPerSecondByDestination)
      .map(([d, n]) => `${d} ${n}`)
      .join(', '),
    String(p.limited),
  ]);
  const header = [
    'phase',
    'took',
    'effects by stage at its end',
    'worker RSS MiB (peak)',
    'worker CPU % (mean)',
    'provider reads/s',
    'readback requests/s (peak)',
    '429s',
  ];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  const perTenThousand = report.parked ? (report.parkMs / report.parked) * 10_000 : 0;
  return [
    `${options.effects} effects (${Object.entries(report.mix)
      .map(([d, n]) => `${d} ${n}`)
      .join(
        ', ',
      )}) on the ${options.target === 'dev' ? 'dev server' : 'cluster'}, ${options.workers} worker processes, outage held ${s(options.holdMs)}, provider back at ` +
      `${options.providerRatePerSecond} requests/s; declared readback rates ${JSON.stringify(report.declaredReadbackRates)}`,
    line(header),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map(line),
    '',
    `parked ${report.parked} of ${options.effects} in UNKNOWN in ${s(report.parkMs)} (${s(perTenThousand)} per 10,000)`,
    `drain: ${report.settled ? 'every effect recorded or waiting for a person with a reason' : 'NOT settled'} ` +
      `${s(report.drainMs)} after the provider returned (to the last effect settled, by the ledger); final ${JSON.stringify(report.final)}`,
    ...(report.lookNow
      ? [
          `bulk look-now (${report.lookNow.mode}) once the provider was back: ${report.lookNow.asked} of ${report.lookNow.planned} asked, ` +
            `${report.lookNow.skipped} skipped, ${report.lookNow.closedMeanwhile} settled before their signal, ` +
            `${report.lookNow.failed} failed${report.lookNow.failures ? ` (${report.lookNow.failures.join('; ')})` : ''}`,
          `  plan (${report.lookNow.mode.startsWith('dry-run') ? 'dry run: the workflow list, its search attributes' : "the ledger's query"}): ${s(report.lookNow.planMs)}`,
          `  send (${report.lookNow.mode === 'dry-run-signals' ? 'the signals' : 'a reset of each waiting look, else its signal'}): ${s(report.lookNow.sendMs)}`,
        ]
      : []),
    ...(report.drain ? [drainLine(report.drain)] : []),
    ...(report.drainEndToEnd && report.drain?.from !== 'provider back' ? [drainLine(report.drainEndToEnd)] : []),
    `load average (1, 5, 15 min): ${report.loadAverage.start.map((n) => n.toFixed(2)).join(' ')} at the start, ` +
      `${report.loadAverage.end.map((n) => n.toFixed(2)).join(' ')} at the end`,
    `ledger ${report.ledgerBytesPerEffect} bytes/effect, Temporal history ${report.historyBytesPerEffect} bytes/effect ` +
      `(${report.historyBytesFrom})`,
    ...(report.workerCpuMsPerWaitingEffectPerHour
      ? [
          `worker CPU while the outage held: ${report.workerCpuMsPerWaitingEffectPerHour.gross.toFixed(0)} ms per ` +
            `waiting effect per hour, ${report.workerCpuMsPerWaitingEffectPerHour.net.toFixed(0)} less the workers' ` +
            `idle ${(report.workerCpuMsPerWaitingEffectPerHour.idlePerHour / 1000).toFixed(1)} CPU s/h (all workers; ` +
            "the parked effects' looks failing and retried)",
        ]
      : []),
    ...(report.looks
      ? [
          `a look (probe: ${report.looks.effects} effects waiting for a person, looking every second for ` +
            `${report.looks.windowSeconds.toFixed(0)} s): ${report.looks.looks} looks added ${report.looks.events} ` +
            `history events, ${report.looks.bytes} bytes (${report.looks.eventsPerLook.toFixed(2)} events per look); ` +
            `worker CPU ${(report.looks.cpuMsPerLook.workers ?? Number.NaN).toFixed(1)} ms per look`,
          `a wake: a stale decision ${report.looks.wakes.staleDecision.eventsPerWake.toFixed(1)} events, ` +
            `${report.looks.wakes.staleDecision.bytesPerWake.toFixed(0)} bytes; a look-now ` +
            `${report.looks.wakes.lookNow.eventsPerWake.toFixed(1)} events, ${report.looks.wakes.lookNow.bytesPerWake.toFixed(0)} bytes (its signal)`,
          `a look-now by reset of the waiting watch: ${report.looks.resetLookNow.resets} reset, ${report.looks.resetLookNow.looks} looks, ` +
            `${report.looks.resetLookNow.events} history events`,
        ]
      : []),
    ...(report.historyEventsPerWaitingEffectPerDay
      ? [
          'history events per waiting effect per day at the default schedule (10 min doubling to the cap; looks only): ' +
            Object.entries(report.historyEventsPerWaitingEffectPerDay)
              .map(([d, v]) => `${d} ${v.looksPerDay.toFixed(0)} looks → ${v.events.toFixed(1)} events`)
              .join(', '),
        ]
      : []),
    ...(report.waitingHistory
      ? [
          `an effect waiting for a person (${report.waitingHistory.effectId}): ${report.waitingHistory.events} events, ` +
            `${report.waitingHistory.bytes} bytes in its run after ${report.waitingHistory.looks} looks (its watch on ` +
            `attempt ${report.waitingHistory.watchAttempt})`,
        ]
      : []),
  ].join('\n');
}
