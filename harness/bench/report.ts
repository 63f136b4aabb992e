// What the bench prints and draws: percentiles, a plain-text table, and a small hand-written SVG
// (latency CDFs of bare vs ledgered; throughput against concurrency and against worker processes).

export interface LatencySummary {
  count: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] ?? Number.NaN;
}

export function summarize(latencies: readonly number[]): LatencySummary {
  const sorted = [...latencies].sort((a, b) => a - b);
  const mean = sorted.reduce((sum, v) => sum + v, 0) / (sorted.length || 1);
  return {
    count: sorted.length,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? Number.NaN,
    mean,
  };
}

/** Left-aligned first column, right-aligned others. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export interface Series {
  label: string;
  color: string;
  points: Array<[number, number]>;
}

export interface ChartInput {
  title: string;
  /** Sorted approve→done latencies (ms) per kind. */
  latencies: Array<{ label: string; color: string; values: number[] }>;
  throughputByConcurrency: Series[];
  throughputByWorkers: Series[];
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** About five round tick values covering [0, max]. */
function ticks(max: number): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / 5;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 2.5, 5, 10].find((m) => m * magnitude >= raw) ?? 10) * magnitude;
  const out: number[] = [];
  for (let v = 0; v <= max + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  if ((out.at(-1) ?? 0) < max) out.push(Number(((out.at(-1) ?? 0) + step).toPrecision(12)));
  return out;
}

interface Panel {
  x: number;
  y: number;
  w: number;
  h: number;
  title: string;
  xLabel: string;
  yLabel: string;
  /** Categorical x: the values are drawn evenly spaced in this order. */
  xCategories?: number[];
  series: Series[];
  xMax?: number;
  yMax?: number;
  steps?: boolean;
}

function panel(p: Panel): string {
  const out: string[] = [];
  const allX = p.series.flatMap((s) => s.points.map(([x]) => x));
  const allY = p.series.flatMap((s) => s.points.map(([, y]) => y));
  const yTicks = ticks(p.yMax ?? Math.max(0, ...allY));
  const yTop = yTicks.at(-1) ?? 1;
  const categories = p.xCategories;
  const xTicks = categories ?? ticks(p.xMax ?? Math.max(0, ...allX));
  const xRight = categories ? categories.length - 1 : (xTicks.at(-1) ?? 1);
  const xPos = (x: number) => {
    const v = categories ? Math.max(0, categories.indexOf(x)) : x;
    return p.x + (xRight === 0 ? p.w / 2 : (v / xRight) * p.w);
  };
  const yPos = (y: number) => p.y + p.h - (y / yTop) * p.h;
  out.push(`<text x="${p.x + p.w / 2}" y="${p.y - 14}" text-anchor="middle" font-weight="bold">${esc(p.title)}</text>`);
  for (const t of yTicks) {
    const y = yPos(t);
    out.push(`<line x1="${p.x}" x2="${p.x + p.w}" y1="${y}" y2="${y}" stroke="#e4e4e4"/>`);
    out.push(`<text x="${p.x - 6}" y="${y + 4}" text-anchor="end" font-size="11">${t}</text>`);
  }
  for (const t of xTicks) {
    const x = xPos(t);
    out.push(`<line x1="${x}" x2="${x}" y1="${p.y + p.h}" y2="${p.y + p.h + 5}" stroke="#333"/>`);
    out.push(`<text x="${x}" y="${p.y + p.h + 18}" text-anchor="middle" font-size="11">${t}</text>`);
  }
  out.push(`<rect x="${p.x}" y="${p.y}" width="${p.w}" height="${p.h}" fill="none" stroke="#333"/>`);
  if (allX.length === 0) {
    out.push(
      `<text x="${p.x + p.w / 2}" y="${p.y + p.h / 2}" text-anchor="middle" fill="#888">not measured in this run</text>`,
    );
  }
  out.push(`<text x="${p.x + p.w / 2}" y="${p.y + p.h + 38}" text-anchor="middle">${esc(p.xLabel)}</text>`);
  out.push(
    `<text transform="translate(${p.x - 44} ${p.y + p.h / 2}) rotate(-90)" text-anchor="middle">${esc(p.yLabel)}</text>`,
  );
  for (const s of p.series) {
    const points = s.points.filter(([x]) => !categories || categories.includes(x));
    if (points.length === 0) continue;
    // A numeric axis clamps what lies past its end (the CDF's tail) onto the frame.
    const px = (x: number) => xPos(categories ? x : Math.min(x, xRight)).toFixed(1);
    const path = points
      .map(([x, y], j) => {
        if (j === 0 || !p.steps) return `${j === 0 ? 'M' : 'L'}${px(x)},${yPos(y).toFixed(1)}`;
        return `H${px(x)}V${yPos(y).toFixed(1)}`;
      })
      .join(' ');
    out.push(`<path d="${path}" fill="none" stroke="${s.color}" stroke-width="2"/>`);
    if (!p.steps) {
      for (const [x, y] of points) {
        out.push(`<circle cx="${xPos(x).toFixed(1)}" cy="${yPos(y).toFixed(1)}" r="3" fill="${s.color}"/>`);
      }
    }
  }
  return out.join('\n');
}

export function renderChart(input: ChartInput): string {
  const all = input.latencies.flatMap((l) => l.values).sort((a, b) => a - b);
  // The CDF's x axis stops at the overall p99.5 so one straggler does not squash the curves.
  const xMax = percentile(all, 99.5);
  const cdf: Series[] = input.latencies.map((l) => ({
    label: `${l.label} (n=${l.values.length})`,
    color: l.color,
    points: [
      [l.values[0] ?? 0, 0] as [number, number],
      ...l.values.map((v, i) => [v, (i + 1) / l.values.length] as [number, number]),
    ],
  }));
  const concurrencies = [...new Set(input.throughputByConcurrency.flatMap((s) => s.points.map(([x]) => x)))].sort(
    (a, b) => a - b,
  );
  const workers = [...new Set(input.throughputByWorkers.flatMap((s) => s.points.map(([x]) => x)))].sort(
    (a, b) => a - b,
  );
  const panels = [
    panel({
      x: 70,
      y: 60,
      w: 320,
      h: 260,
      title: 'approve → done latency (CDF)',
      xLabel: 'latency, ms (axis cut at overall p99.5)',
      yLabel: 'fraction of effects done',
      series: cdf,
      xMax,
      yMax: 1,
      steps: true,
    }),
    panel({
      x: 480,
      y: 60,
      w: 280,
      h: 260,
      title: 'throughput vs concurrency (1 worker process)',
      xLabel: 'effects in flight (concurrency)',
      yLabel: 'effects/s',
      xCategories: concurrencies,
      series: input.throughputByConcurrency,
    }),
    panel({
      x: 850,
      y: 60,
      w: 220,
      h: 260,
      title: 'throughput vs worker processes',
      xLabel: 'worker processes',
      yLabel: 'effects/s',
      xCategories: workers,
      series: input.throughputByWorkers,
    }),
  ];
  return [
    '<svg xmlns="http://www.w3.org/2000/svg" width="1110" height="410" viewBox="0 0 1110 410" font-family="sans-serif" font-size="13">',
    '<rect width="100%" height="100%" fill="#fff"/>',
    `<text x="555" y="22" text-anchor="middle" font-size="15" font-weight="bold">${esc(input.title)}</text>`,
    // One legend for all three panels: the kinds share their colours.
    ...cdf.map((s, i) => {
      const x = 420 + i * 170;
      return `<line x1="${x}" x2="${x + 22}" y1="388" y2="388" stroke="${s.color}" stroke-width="3"/><text x="${x + 28}" y="392" font-size="12">${esc(s.label)}</text>`;
    }),
    ...panels,
    '</svg>',
    '',
  ].join('\n');
}
