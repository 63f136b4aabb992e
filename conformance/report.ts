// The run as a person reads it: per destination, a table of fault × step kind → the probe's class, when it
// answered, the readback's verdict and the objects that landed, then the workflow's path and its objects;
// then every violation, named by destination, fault and step kind.
import type { CellResult } from './cells.js';
import { FURTHER_STEP, type StepKind } from './faults.js';
import type { ConformanceReport } from './run.js';

const STEP_LABEL: Readonly<Record<StepKind, string>> = {
  main: 'main (E)',
  further: `further (E~${FURTHER_STEP})`,
  revision: 'revision (E#r2)',
};

function columns(rows: string[][]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** A path with its repeats counted: "readback inconclusive (×38)", not the same words 38 times. */
function collapsed(path: readonly string[]): string {
  const runs: { step: string; times: number }[] = [];
  for (const step of path) {
    const last = runs.at(-1);
    if (last?.step === step) last.times += 1;
    else runs.push({ step, times: 1 });
  }
  return runs.map((r) => (r.times > 1 ? `${r.step} (×${r.times})` : r.step)).join(' → ');
}

function row(c: CellResult): string[] {
  const p = c.probe;
  const w = c.workflow;
  const landed = p ? (p.landedFinally === p.landed ? String(p.landed) : `${p.landed} → ${p.landedFinally}`) : '';
  const retries = w?.retriesByKit ? `, ${w.retriesByKit} retr${w.retriesByKit === 1 ? 'y' : 'ies'} by the kit` : '';
  const path = w
    ? `${w.stage ?? 'open'}: ${collapsed(w.path) || '—'} (${w.attempts} attempt${w.attempts === 1 ? '' : 's'}${retries})`
    : '';
  return [
    c.fault,
    STEP_LABEL[c.kind],
    p?.outcome.class ?? '',
    p?.answeredAfterMs === null || p === undefined ? '—' : `${p.answeredAfterMs} ms`,
    p?.readback.outcome ?? '',
    landed,
    path,
    w ? String(w.objects) : '',
    c.violations.length ? `VIOLATION (${c.violations.length})` : 'ok',
  ];
}

export function conformanceTable(report: Omit<ConformanceReport, 'table'>): string {
  const out: string[] = [];
  for (const d of report.destinations) {
    const c = d.contract;
    const grace = report.absenceGraceMs ?? c?.absenceGraceMs;
    out.push(
      `${d.destination}${c ? ` · ${c.mechanism}, keys per ${c.keyScope}, ${c.retryAfterProvenAbsence ? 'retries automatically after proven absence' : 'a person decides every retry'}` : ''} · call timeout ${report.callTimeoutMs} ms, absence grace ${grace ?? '?'} ms`,
    );
    if (d.calibration) {
      const k = d.calibration;
      out.push(
        `  calibration: a clean send carried ${k.upstreamBytes} bytes up and ${k.downstreamBytes} down; the object lands once ${k.landingBytes} answer bytes have arrived (${k.probes} sends)`,
      );
    }
    if (d.error) out.push(`  NOT RUN: ${d.error}`);
    if (d.cells.length) {
      const header = ['fault', 'step', 'class', 'answered', 'readback', 'landed', 'workflow', 'objects', 'verdict'];
      out.push(
        columns([header, ...d.cells.map(row)])
          .split('\n')
          .map((line) => `  ${line}`)
          .join('\n'),
      );
    }
    const skipped = new Map<string, string[]>();
    for (const s of d.skipped) skipped.set(s.why, [...(skipped.get(s.why) ?? []), `${s.fault} × ${s.kind}`]);
    for (const [why, cells] of skipped) out.push(`  n/a (${why}): ${cells.join(', ')}`);
    out.push('');
  }
  if (report.violations.length) {
    out.push(`${report.violations.length} violation${report.violations.length === 1 ? '' : 's'}:`);
    for (const v of report.violations)
      out.push(
        v.phase === 'setup'
          ? `  ${v.destination}: ${v.what}`
          : `  ${v.destination} · ${v.fault} · ${STEP_LABEL[v.kind as StepKind]} (${v.phase}): ${v.what}`,
      );
  } else out.push('no violations');
  if (report.devServerLog) out.push(`the Temporal dev server's log: ${report.devServerLog}`);
  return out.join('\n');
}
