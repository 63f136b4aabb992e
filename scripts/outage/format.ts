// The outage's table: per phase, effects by stage, worker RSS and CPU, the provider's reads a second against its
// limit, 429s; then parking and drain times and the per-effect costs.
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
      .join(', ')}), ${options.workers} worker processes, outage held ${s(options.holdMs)}, provider back at ` +
      `${options.providerRatePerSecond} requests/s; declared readback rates ${JSON.stringify(report.declaredReadbackRates)}`,
    line(header),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map(line),
    '',
    `parked ${report.parked} of ${options.effects} in UNKNOWN in ${s(report.parkMs)} (${s(perTenThousand)} per 10,000)`,
    `drain: ${report.settled ? 'every effect recorded or waiting for a person with a reason' : 'NOT settled'} ` +
      `${s(report.drainMs)} after the provider returned; final ${JSON.stringify(report.final)}`,
    `ledger ${report.ledgerBytesPerEffect} bytes/effect, Temporal history ${report.historyBytesPerEffect} bytes/effect ` +
      '(history_node, the whole run)',
    ...(report.waitingHistory
      ? [
          `an effect waiting for a person (${report.waitingHistory.effectId}): ${report.waitingHistory.events} events, ` +
            `${report.waitingHistory.bytes} bytes of history; its last readback cycle ${report.waitingHistory.cycleEvents} ` +
            `events, ${report.waitingHistory.cycleBytes} bytes`,
        ]
      : []),
  ].join('\n');
}
