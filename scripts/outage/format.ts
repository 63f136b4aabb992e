// The outage's table: per phase, effects by stage, worker RSS and CPU, the provider's reads a second against its
// limit, 429s; then parking and drain times, the drain ratio, and the per-effect costs (per look, per wake, per day).
import type { OutageReport } from './run.js';

const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

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
      `${s(report.drainMs)} after the provider returned; final ${JSON.stringify(report.final)}`,
    ...(report.drain
      ? [
          `drain ratio ${report.drain.ratio.toFixed(2)}: ${s(report.drain.drainSeconds * 1000)} against ` +
            `${s(report.drain.boundSeconds * 1000)} at the rates (bound by ${report.drain.boundBy}; requests ` +
            `${Object.entries(report.drain.requestsByDestination)
              .map(([d, n]) => `${d} ${n} = ${(report.drain?.secondsAtDeclaredRate[d] ?? 0).toFixed(1)} s`)
              .join(', ')} at the declared rates; the provider let ${report.drain.providerRequests} through = ` +
            `${report.drain.secondsAtProviderLimit.toFixed(1)} s at its limit)`,
        ]
      : []),
    ...(report.lookNow
      ? [
          `bulk look-now (${report.lookNow.mode}) once the provider was back: ${report.lookNow.asked} of ${report.lookNow.planned} asked, ` +
            `${report.lookNow.skipped} skipped, ${report.lookNow.closedMeanwhile} settled before their signal, ` +
            `${report.lookNow.failed} failed${report.lookNow.failures ? ` (${report.lookNow.failures.join('; ')})` : ''} (${report.lookNow.mode === 'dry-run' ? 'dry run' : 'ledger query'} ${s(report.lookNow.planMs)}, ` +
            `signals ${s(report.lookNow.sendMs)})`,
        ]
      : []),
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
            `${report.looks.wakes.lookNow.eventsPerWake.toFixed(1)} events, ${report.looks.wakes.lookNow.bytesPerWake.toFixed(0)} bytes`,
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
