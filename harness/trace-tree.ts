// A trace as a receiver holds it (OTLP JSON: Jaeger's /api/v3, a collector's file), as spans and as a tree: the
// tracing test asserts on it, the demo prints it, and docs/tracing-invoice.svg is drawn from it.

export interface SpanRecord {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** OTLP's span kind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  service: string;
  attributes: Record<string, string | number | boolean>;
  links: Array<{ traceId: string; spanId: string }>;
  /** Nanoseconds since the epoch. */
  startNs: bigint;
  endNs: bigint;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  status: number;
}

type AnyValue = {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
};
type KeyValue = { key: string; value: AnyValue };

function plainValue(v: AnyValue): string | number | boolean {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  return JSON.stringify(v.arrayValue?.values?.map(plainValue) ?? v);
}

const attributesOf = (list: KeyValue[] | undefined) =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, plainValue(kv.value)]));

/** Jaeger's own annotations on spans, not the application's. */
const RECEIVER_NOTES = new Set(['@jaeger@warnings', 'otel.scope.name', 'otel.scope.version']);

/** The spans of an OTLP JSON document ({ resourceSpans: [...] }), IDs in hex. */
export function spansOfOtlpJson(document: unknown): SpanRecord[] {
  const { resourceSpans = [] } = (document ?? {}) as {
    resourceSpans?: Array<{
      resource?: { attributes?: KeyValue[] };
      scopeSpans?: Array<{
        spans?: Array<{
          traceId: string;
          spanId: string;
          parentSpanId?: string;
          name: string;
          kind?: number;
          startTimeUnixNano: string;
          endTimeUnixNano: string;
          attributes?: KeyValue[];
          links?: Array<{ traceId: string; spanId: string }>;
          status?: { code?: number | string };
        }>;
      }>;
    }>;
  };
  return resourceSpans.flatMap((rs) => {
    const service = String(attributesOf(rs.resource?.attributes)['service.name'] ?? '?');
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => {
        const attributes = attributesOf(s.attributes);
        for (const key of RECEIVER_NOTES) delete attributes[key];
        const code = s.status?.code;
        return {
          traceId: s.traceId,
          spanId: s.spanId,
          ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
          name: s.name,
          kind: Number(s.kind ?? 0),
          service,
          attributes,
          links: (s.links ?? []).map(({ traceId, spanId }) => ({ traceId, spanId })),
          startNs: BigInt(s.startTimeUnixNano),
          endNs: BigInt(s.endTimeUnixNano),
          status: code === 'STATUS_CODE_ERROR' ? 2 : code === 'STATUS_CODE_OK' ? 1 : Number(code ?? 0),
        };
      }),
    );
  });
}

export interface SpanNode extends SpanRecord {
  children: SpanNode[];
  depth: number;
}

/** The spans as trees (roots first, children by start time): a span whose parent is missing is a root. */
export function spanTree(spans: readonly SpanRecord[]): SpanNode[] {
  const nodes = new Map(spans.map((s) => [s.spanId, { ...s, children: [] as SpanNode[], depth: 0 }]));
  const roots: SpanNode[] = [];
  for (const node of nodes.values()) {
    const parent = node.parentSpanId ? nodes.get(node.parentSpanId) : undefined;
    (parent ? parent.children : roots).push(node);
  }
  const byStart = (a: SpanNode, b: SpanNode) => (a.startNs < b.startNs ? -1 : a.startNs > b.startNs ? 1 : 0);
  const order = (list: SpanNode[], depth: number) => {
    list.sort(byStart);
    for (const n of list) {
      n.depth = depth;
      order(n.children, depth + 1);
    }
  };
  order(roots, 0);
  return roots;
}

/** The earliest start and the latest end, in nanoseconds (bigints: Math.min and Math.max take none). */
function timeSpan(spans: readonly SpanRecord[]): { origin: bigint; end: bigint } {
  let origin = spans[0]?.startNs ?? 0n;
  let end = origin + 1n;
  for (const s of spans) {
    if (s.startNs < origin) origin = s.startNs;
    if (s.endNs > end) end = s.endNs;
  }
  return { origin, end };
}

/** Depth-first, as a tree reads top to bottom. */
export function flatten(roots: readonly SpanNode[]): SpanNode[] {
  return roots.flatMap((r) => [r, ...flatten(r.children)]);
}

/** The attributes a reader of an effect's trace looks for, in a short line. */
const SHOWN = [
  'effect.id',
  'effect.step',
  'effect.revision',
  'effect.attempt',
  'effect.idempotency_key',
  'effect.outcome',
  'effect.readback.verdict',
  'effect.decision',
  'effect.created',
  'http.request.method',
  'http.response.status_code',
  'url.full',
  'db.operation.name',
  'messaging.destination.name',
  'server.address',
];

/** The key attributes of a span that its parent does not already show with the same value. */
export function shownAttributes(span: SpanRecord, parent?: SpanRecord, keys = SHOWN): string {
  return keys
    .filter((k) => span.attributes[k] !== undefined && parent?.attributes[k] !== span.attributes[k])
    .map((k) => `${k}=${span.attributes[k]}`)
    .join(' ');
}

/** The tree as text: one span a line, indented, with its service, duration, links and key attributes. */
export function renderTreeText(spans: readonly SpanRecord[]): string {
  const rows = flatten(spanTree(spans));
  const index = new Map(rows.map((r, i) => [r.spanId, i + 1]));
  const byId = new Map(rows.map((r) => [r.spanId, r]));
  const { origin } = timeSpan(rows);
  return rows
    .map((r, i) => {
      const at = Number(r.startNs - origin) / 1e6;
      const took = Number(r.endNs - r.startNs) / 1e6;
      const links = r.links
        .map((l) => (index.has(l.spanId) ? `→ #${index.get(l.spanId)}` : `→ a span of trace ${l.traceId.slice(0, 8)}…`))
        .join(' ');
      const error = r.status === 2 ? ' ERROR' : '';
      return `${String(i + 1).padStart(3)} ${'  '.repeat(r.depth)}${r.name} [${r.service}] +${at.toFixed(0)} ms ${took.toFixed(1)} ms${error}${links ? ` linked ${links}` : ''}  ${shownAttributes(r, byId.get(r.parentSpanId ?? ''))}`.trimEnd();
    })
    .join('\n');
}

const xml = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');

const SERVICE_COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b'];

/** The tree as an SVG: a row per span, its bar on the trace's time axis, links drawn as dashed arrows. */
export function renderTreeSvg(spans: readonly SpanRecord[], title: string): string {
  const rows = flatten(spanTree(spans));
  const services = [...new Set(rows.map((r) => r.service))];
  const colour = (service: string) => SERVICE_COLOURS[services.indexOf(service) % SERVICE_COLOURS.length];
  const { origin, end } = timeSpan(rows);
  const rowHeight = 34;
  const top = 56;
  const labelWidth = 560;
  const barWidth = 520;
  const width = labelWidth + barWidth + 40;
  const height = top + rows.length * rowHeight + 40;
  const x = (ns: bigint) => labelWidth + (Number(ns - origin) / Number(end - origin)) * barWidth;
  const y = (i: number) => top + i * rowHeight;
  const index = new Map(rows.map((r, i) => [r.spanId, i]));
  const byId = new Map(rows.map((r) => [r.spanId, r]));
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="monospace" font-size="12">`,
    `<title>${xml(title)}</title>`,
    '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>',
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="12" y="22" font-size="15" font-weight="bold">${xml(title)}</text>`,
  ];
  let legendX = 12;
  for (const service of services) {
    parts.push(`<text x="${legendX}" y="42" fill="${colour(service)}">■ ${xml(service)}</text>`);
    legendX += 24 + service.length * 7.5;
  }
  parts.push(
    `<text x="${legendX}" y="42" fill="#555">time →, ${(Number(end - origin) / 1e6).toFixed(0)} ms in all; dashed: a link</text>`,
  );
  rows.forEach((r, i) => {
    const yy = y(i);
    if (i % 2 === 0) parts.push(`<rect x="0" y="${yy - 4}" width="${width}" height="${rowHeight}" fill="#f6f6f6"/>`);
    const indent = 12 + r.depth * 14;
    const error = r.status === 2 ? ' ✗' : '';
    parts.push(
      `<text x="${indent}" y="${yy + 11}" fill="${colour(r.service)}" font-weight="bold">${xml(r.name)}${error}</text>`,
      `<text x="${indent}" y="${yy + 25}" fill="#444" font-size="10">${xml(shownAttributes(r, byId.get(r.parentSpanId ?? '')).slice(0, 110))}</text>`,
    );
    const x0 = x(r.startNs);
    const w = Math.max(2, x(r.endNs) - x0);
    parts.push(
      `<rect x="${x0.toFixed(1)}" y="${yy + 3}" width="${w.toFixed(1)}" height="12" fill="${colour(r.service)}" opacity="0.8"/>`,
    );
    for (const link of r.links) {
      const from = index.get(link.spanId);
      if (from === undefined) continue;
      const source = rows[from];
      if (!source) continue;
      const fx = x(source.endNs) + 2;
      const fy = y(from) + 9;
      parts.push(
        `<path d="M ${fx.toFixed(1)} ${fy} C ${(fx + 60).toFixed(1)} ${fy}, ${(x0 - 60).toFixed(1)} ${yy + 9}, ${(x0 - 2).toFixed(1)} ${yy + 9}" fill="none" stroke="#555" stroke-dasharray="4 3" marker-end="url(#arrow)"/>`,
      );
    }
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
