// The outage as an SVG: effects by stage over time (top), and the reads a second the provider saw against its
// rate limit and the keyed API's declared readback rate (bottom), with the phases shaded. No dependencies.
import { readsAt } from '../../harness/simulator/traffic.js';
import type { OutageReport } from './run.js';

const W = 960;
const PANEL = 260;
const PAD = { left: 60, right: 160, top: 30, bottom: 30 };
const COLORS: Record<string, string> = {
  prepared: '#bbbbbb',
  released: '#999999',
  attempted: '#f0a030',
  unknown: '#d03030',
  reconciled: '#a050d0',
  recorded: '#30a050',
  rejected: '#505050',
  abandoned: '#000000',
  'waiting for a person': '#3070d0',
  reads: '#3070d0',
  'keyed readback requests': '#d03030',
  limited: '#f0a030',
};

const esc = (s: string) => s.replace(/[<>&]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;' })[c] ?? c);

function polyline(points: Array<[number, number]>, color: string, dash = ''): string {
  if (points.length === 0) return '';
  const d = points.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(' ');
  return `<polyline fill="none" stroke="${color}" stroke-width="2"${dash ? ` stroke-dasharray="${dash}"` : ''} points="${d}"/>`;
}

export function outageChart(report: OutageReport): string {
  const end = Math.max(1, report.samples.at(-1)?.t ?? 1);
  const began = (report.traffic[0]?.at ?? 0) - (report.samples[0]?.t ?? 0);
  const plotW = W - PAD.left - PAD.right;
  const x = (t: number) => PAD.left + (t / end) * plotW;
  const parts: string[] = [];
  const top = PAD.top;
  const bottom = PAD.top + PANEL + 50;

  // Phases, shaded across both panels.
  const shades: Record<string, string> = { park: '#fdeaea', hold: '#fff4e0', recover: '#eaf6ec' };
  for (const p of report.phases) {
    parts.push(
      `<rect x="${x(p.startedMs)}" y="${top}" width="${Math.max(1, x(p.endedMs) - x(p.startedMs))}" height="${PANEL * 2 + 50}" fill="${shades[p.name]}"/>`,
      `<text x="${x(p.startedMs) + 4}" y="${top + 14}" font-size="12">${p.name}</text>`,
    );
  }

  // Panel 1: effects by stage.
  const stages = [...new Set(report.samples.flatMap((s) => Object.keys(s.stages)))];
  const yEffects = (n: number) => top + PANEL - (n / Math.max(1, report.options.effects)) * PANEL;
  const series1: Array<[string, Array<[number, number]>]> = stages.map((stage) => [
    stage,
    report.samples.map((s) => [x(s.t), yEffects(s.stages[stage] ?? 0)]),
  ]);
  series1.push([
    'waiting for a person',
    report.samples.filter((s) => s.waitingForPerson > 0).map((s) => [x(s.t), yEffects(s.waitingForPerson)]),
  ]);
  for (const [name, points] of series1) parts.push(polyline(points, COLORS[name] ?? '#777'));
  parts.push(axis(top, PANEL, report.options.effects, 'effects'));
  legend(
    parts,
    series1.map(([n]) => n),
    top,
  );

  // Panel 2: reads a second at the provider, against its limit and the keyed API's declared readback rate (requests).
  // The counter lists only seconds with traffic: the silent ones (the outage) are zeros on the chart.
  const seen = new Map(report.traffic.map((s) => [s.at, s]));
  const first = report.traffic[0]?.at ?? 0;
  const last = report.traffic.at(-1)?.at ?? 0;
  const seconds = [];
  for (let at = first; at <= last; at += 1000)
    seconds.push(seen.get(at) ?? { at, reads: 0, writes: 0, limited: 0, readsByPath: {} });
  const keyedRate = report.declaredReadbackRates['keyed-api'] ?? 0;
  const peak = Math.max(report.options.providerRatePerSecond, keyedRate, ...seconds.map((s) => s.reads), 1) * 1.1;
  const yReads = (n: number) => bottom + PANEL - (n / peak) * PANEL;
  const at = (ms: number) => x(ms - began);
  const series2: Array<[string, Array<[number, number]>]> = [
    ['reads', seconds.map((s) => [at(s.at), yReads(s.reads - s.limited)])],
    ['keyed readback requests', seconds.map((s) => [at(s.at), yReads(readsAt(s, 'keyed-api'))])],
    ['limited', seconds.map((s) => [at(s.at), yReads(s.limited)])],
  ];
  for (const [name, points] of series2) parts.push(polyline(points, COLORS[name] ?? '#777'));
  const recover = report.phases.find((p) => p.name === 'recover');
  if (recover) {
    const limitY = yReads(report.options.providerRatePerSecond);
    const capY = yReads(keyedRate);
    parts.push(
      polyline(
        [
          [x(recover.startedMs), limitY],
          [x(recover.endedMs), limitY],
        ],
        '#000',
        '6 4',
      ),
      `<text x="${x(recover.startedMs) + 4}" y="${limitY - 4}" font-size="11">provider limit ${report.options.providerRatePerSecond}/s</text>`,
      polyline(
        [
          [PAD.left, capY],
          [PAD.left + plotW, capY],
        ],
        '#d03030',
        '2 3',
      ),
      `<text x="${PAD.left + 4}" y="${capY - 4}" font-size="11" fill="#d03030">keyed-api declared readback requests ${keyedRate}/s</text>`,
    );
  }
  parts.push(axis(bottom, PANEL, Math.round(peak), 'requests/s'));
  legend(parts, ['reads (answered)', 'keyed readback requests', 'limited'], bottom, [
    'reads',
    'keyed readback requests',
    'limited',
  ]);
  parts.push(
    `<text x="${PAD.left}" y="${bottom + PANEL + 24}" font-size="12">seconds: 0 … ${Math.round(end / 1000)}</text>`,
  );

  const title = `Outage: ${report.options.effects} effects (${Object.entries(report.mix)
    .map(([d, n]) => `${d} ${n}`)
    .join(
      ', ',
    )}), ${report.options.workers} workers, parked ${report.parked}, drained in ${Math.round(report.drainMs / 1000)} s`;
  const height = bottom + PANEL + PAD.bottom + 10;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${height}" font-family="sans-serif" role="img">
<title>${esc(title)}</title>
<rect width="100%" height="100%" fill="#fff"/>
<text x="${PAD.left}" y="18" font-size="14">${esc(title)}</text>
${parts.join('\n')}
</svg>
`;
}

function axis(y0: number, height: number, max: number, label: string): string {
  return [
    `<line x1="${PAD.left}" y1="${y0}" x2="${PAD.left}" y2="${y0 + height}" stroke="#000"/>`,
    `<line x1="${PAD.left}" y1="${y0 + height}" x2="${W - PAD.right}" y2="${y0 + height}" stroke="#000"/>`,
    `<text x="${PAD.left - 6}" y="${y0 + 10}" font-size="11" text-anchor="end">${max}</text>`,
    `<text x="${PAD.left - 6}" y="${y0 + height}" font-size="11" text-anchor="end">0</text>`,
    `<text x="14" y="${y0 + height / 2}" font-size="11" transform="rotate(-90 14 ${y0 + height / 2})">${label}</text>`,
  ].join('\n');
}

function legend(parts: string[], names: string[], y0: number, colorKeys = names): void {
  names.forEach((name, i) => {
    const y = y0 + 16 + i * 16;
    parts.push(
      `<rect x="${W - PAD.right + 12}" y="${y - 9}" width="10" height="10" fill="${COLORS[colorKeys[i] ?? name] ?? '#777'}"/>`,
      `<text x="${W - PAD.right + 28}" y="${y}" font-size="11">${esc(name)}</text>`,
    );
  });
}
