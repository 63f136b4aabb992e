// runConformance: every target against its real server, through the whole matrix, on the kit's own stack.
// The cells run at once (each with its own proxies and effects), so the run takes about as long as its
// slowest cell.
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  closeAdapter,
  type Destination,
  defineDestination,
  isDestination,
  type KnownDestination,
} from '../domain/destination.js';
import type { DestinationAdapter, DestinationContract } from '../domain/destination-contract.js';
import { connectDestination } from '../workers/hosted-destinations.js';
import { type Calibration, calibrate } from './calibration.js';
import { carrierDestination, carrierName } from './carrier.js';
import { type CellContext, type CellResult, probeCell, workflowCell } from './cells.js';
import { FAULTS, type FaultName, notApplicable, STEP_KINDS, type StepKind } from './faults.js';
import { type KitStack, startKitStack } from './kit-stack.js';
import { turns } from './patience.js';
import { type ProviderShape, shapeOf } from './provider-shape.js';
import { conformanceTable } from './report.js';
import { Router } from './router.js';
import type { ConformanceServer, ConformanceTargets } from './target.js';

export interface ConformanceOptions {
  /**
   * The destinations, as openEffectLedger and createEffectWorker take them (a destinations module's default
   * export): the kit connects each one it runs with its target's env, once per proxy, as a worker would.
   */
  destinations: readonly KnownDestination[];
  /** How the kit reaches each destination's server, by name (a destinations module's `conformance` export). */
  targets: ConformanceTargets;
  /** The destinations to run (names); default every one `targets` names. */
  only?: readonly string[];
  /** Default every fault. */
  faults?: readonly FaultName[];
  /** Default every step kind (revisions only where the destination keys per revision). */
  kinds?: readonly StepKind[];
  /** Narrows the matrix further, cell by cell (a test that runs a few cells per destination). */
  select?: (cell: { destination: string; fault: FaultName; kind: StepKind }) => boolean;
  /** The call timeout every fault is scaled to (default 3000 ms). */
  callTimeoutMs?: number;
  /** Overrides every destination's absence grace; default each destination's own, the promise under test. */
  absenceGraceMs?: number;
  /**
   * How long the workflow phase waits for an effect to close before it reports why not (default 50 s + 4 × (call
   * timeout + absence grace)): a short one for a test whose effects close in seconds or never.
   */
  closeWithinMs?: number;
  /** How late past the call timeout a send may answer before that is a violation (default 1500 ms). */
  sendSlackMs?: number;
  /** Cells running at once, across every destination (default 24): a small machine's share of servers and connections. */
  concurrency?: number;
  /** Progress lines (default: none). */
  log?: (line: string) => void;
}

export interface DestinationReport {
  destination: string;
  contract?: Pick<
    DestinationContract,
    'mechanism' | 'keyScope' | 'retryAfterProvenAbsence' | 'absenceGraceMs' | 'callTimeoutMs'
  >;
  calibration?: Calibration;
  /** Why the destination could not be run at all (its server did not start, a clean send failed). */
  error?: string;
  cells: CellResult[];
  /** Cells that do not apply, and why. */
  skipped: { fault: FaultName; kind: StepKind; why: string }[];
}

export interface Violation {
  destination: string;
  fault: FaultName | 'setup';
  kind: StepKind | 'setup';
  phase: 'probe' | 'workflow' | 'setup';
  what: string;
}

export interface ConformanceReport {
  callTimeoutMs: number;
  absenceGraceMs?: number;
  destinations: DestinationReport[];
  violations: Violation[];
  ok: boolean;
  /** The Temporal dev server's output (its banner and logs), kept when the run found violations. */
  devServerLog?: string;
  /** The table: fault × step kind → class, readback verdict, objects; then every violation, named. */
  table: string;
}

interface Prepared {
  name: string;
  destination: Destination;
  server: ConformanceServer;
  /** The destination connected through a proxy at `address` (host:port). */
  connect: (address: string) => DestinationAdapter;
  clean: DestinationAdapter;
  router: Router;
  report: DestinationReport;
  shape?: ProviderShape;
  /** Why the revision cells cannot run as the target describes them (its refused payload cannot be revised). */
  revisionProblem?: string;
}

function skipReason(
  fault: FaultName,
  kind: StepKind,
  p: Prepared,
  window: { callTimeoutMs: number; absenceGraceMs: number },
) {
  if (kind === 'revision' && p.clean.keyScope !== 'revision')
    return 'keys per effect: a revision carries the same reference';
  return notApplicable(fault, p.server, p.shape, window);
}

/**
 * A revision cell approves the refused payload, then revises it to the sample: both must be payloads of the same
 * operation that the schema accepts, with the same target (a revision may not change it).
 */
export function revisionProblem(
  contract: DestinationContract,
  server: Pick<ConformanceServer, 'sample' | 'refusedPayload'>,
): string | undefined {
  const refused = server.refusedPayload;
  if (contract.keyScope !== 'revision' || !refused) return undefined;
  const { operation, payload } = server.sample;
  const schema = Object.hasOwn(contract.operations, operation) ? contract.operations[operation] : undefined;
  const checked = schema?.safeParse(refused);
  if (checked && !checked.success)
    return `the target's refusedPayload is refused at approval (${checked.error.issues.map((i) => `${i.path.join('.') || 'payload'}: ${i.message}`).join('; ')}): the revision cells need a payload the schema accepts and the server refuses (docs/conformance.md)`;
  const target = (p: Record<string, unknown>) => contract.buildPackage('kit.check', operation, p).target;
  try {
    if (target(refused) !== target(payload))
      return `the target's refusedPayload has the target "${target(refused)}", the sample "${target(payload)}": a revision may not change the target, so the revision cells need a refused payload with the sample's target (docs/conformance.md)`;
  } catch (error) {
    return `the target's refusedPayload cannot be packaged: ${error instanceof Error ? error.message : String(error)}`;
  }
  return undefined;
}

async function prepare(kit: KitStack, tag: string, name: string, options: ConformanceOptions): Promise<Prepared> {
  const { targets } = options;
  const target = Object.hasOwn(targets, name) ? targets[name] : undefined;
  if (!target) throw new Error(`no conformance target named ${name} (known: ${Object.keys(targets).join(', ')})`);
  const known = options.destinations.find((d) => (isDestination(d) ? d.contract : d).name === name);
  if (!known) throw new Error(`no destination named ${name} among the destinations given`);
  if (!isDestination(known))
    throw new Error(`${name} is a bare contract: the kit needs its connect() (defineDestination) to reach it`);
  const destination = known;
  const server = await target.start();
  const connect = (address: string) => {
    const adapter = connectDestination(destination, { ...process.env, ...server.env(address) });
    if (!adapter)
      throw new Error(`${name} did not connect (its connect() returned undefined) with the env its target gave`);
    return adapter;
  };
  let clean: DestinationAdapter;
  try {
    const { port } = await kit.toxiproxy.proxy(`${tag}-clean`, server.upstream);
    clean = connect(`127.0.0.1:${port}`);
    const { operation } = server.sample;
    if (!Object.hasOwn(clean.operations, operation)) throw new Error(`${name} has no operation ${operation}`);
    if (clean.steps && Object.hasOwn(clean.steps, operation))
      throw new Error(`${name} ${operation} has several steps: the sample must be a single-step operation`);
  } catch (error) {
    await server.stop().catch(() => {});
    throw error;
  }
  const problem = revisionProblem(clean, server);
  return {
    name,
    destination,
    server,
    connect,
    clean,
    ...(server.declaration ? { shape: shapeOf(server.declaration) } : {}),
    ...(problem ? { revisionProblem: problem } : {}),
    router: new Router(clean),
    report: {
      destination: name,
      contract: {
        mechanism: clean.mechanism,
        keyScope: clean.keyScope,
        retryAfterProvenAbsence: clean.retryAfterProvenAbsence,
        absenceGraceMs: clean.absenceGraceMs,
        callTimeoutMs: clean.callTimeoutMs,
      },
      cells: [],
      skipped: [],
    },
  };
}

/** Both phases of a cell, at once: each has its own proxy and effect. */
async function runCell(ctx: CellContext, fault: FaultName, kind: StepKind): Promise<CellResult> {
  const failed = (phase: string) => (error: unknown) => {
    throw new Error(`the ${phase} failed: ${error instanceof Error ? error.message : String(error)}`);
  };
  const settled = await Promise.allSettled([
    probeCell(ctx, fault, kind).catch(failed('probe')),
    workflowCell(ctx, fault, kind).catch(failed('workflow')),
  ]);
  const [probe, workflow] = settled.map((s) => (s.status === 'fulfilled' ? s.value : undefined)) as [
    Awaited<ReturnType<typeof probeCell>> | undefined,
    Awaited<ReturnType<typeof workflowCell>> | undefined,
  ];
  const broken = settled.flatMap((s, i) =>
    s.status === 'rejected'
      ? [{ phase: i === 0 ? ('probe' as const) : ('workflow' as const), what: String((s.reason as Error).message) }]
      : [],
  );
  if (!probe || !workflow)
    return {
      destination: ctx.destination,
      fault,
      kind,
      ...(probe ? { probe: probe.probe } : {}),
      ...(workflow ? { workflow: workflow.workflow } : {}),
      violations: broken,
    };
  return {
    destination: ctx.destination,
    fault,
    kind,
    probe: probe.probe,
    workflow: workflow.workflow,
    violations: [
      ...probe.violations.map((what) => ({ phase: 'probe' as const, what })),
      ...workflow.violations.map((what) => ({ phase: 'workflow' as const, what })),
    ],
  };
}

export async function runConformance(options: ConformanceOptions): Promise<ConformanceReport> {
  const log = options.log ?? (() => {});
  const callTimeoutMs = options.callTimeoutMs ?? 3000;
  const sendSlackMs = options.sendSlackMs ?? 1500;
  const names = options.only?.length ? [...options.only] : Object.keys(options.targets);
  const faults = options.faults?.length ? options.faults : FAULTS;
  const kinds = options.kinds?.length ? options.kinds : STEP_KINDS;
  const run = randomBytes(3).toString('hex');
  const inTurn = turns(options.concurrency ?? 24);
  log(`conformance ${run}: starting the kit's stack (Temporal dev server, ledger, Toxiproxy)`);
  const kit = await startKitStack({ callTimeoutMs, absenceGraceMs: options.absenceGraceMs });
  const reports: DestinationReport[] = [];
  const prepared: Prepared[] = [];
  try {
    for (const result of await Promise.allSettled(
      names.map((name) => prepare(kit, `k${run}.${name}`, name, options)),
    )) {
      const name = names[reports.length] as string;
      if (result.status === 'fulfilled') {
        prepared.push(result.value);
        reports.push(result.value.report);
      } else reports.push({ destination: name, error: String(result.reason), cells: [], skipped: [] });
    }
    // The kit's client and worker take these as any client and worker do: each destination under test,
    // connected to its router; each one's carrier, on the kit's notes database.
    await kit.host([
      ...prepared.map((p) =>
        defineDestination({ contract: p.destination.contract, connect: () => p.router.adapter() }),
      ),
      ...prepared.map((p) => carrierDestination(p.name, p.server.sample, kit.notes.url)),
    ]);
    log(`conformance ${run}: calibrating ${prepared.map((p) => p.name).join(', ')} on their servers`);
    await Promise.all(
      prepared.map(async (p) => {
        const tag = `k${run}.${p.name}`;
        try {
          const calibration = await calibrate({
            toxiproxy: kit.toxiproxy,
            server: p.server,
            connect: p.connect,
            contract: p.clean,
            tag,
            callTimeoutMs,
            sendSlackMs,
          });
          p.report.calibration = calibration;
          const ctx: CellContext = {
            tag,
            destination: p.name,
            contract: p.clean,
            server: p.server,
            connect: p.connect,
            calibration,
            kit,
            router: p.router,
            clean: p.clean,
            callTimeoutMs,
            absenceGraceMs: options.absenceGraceMs ?? p.clean.absenceGraceMs,
            sendSlackMs,
            ...(p.shape ? { shape: p.shape } : {}),
            ...(options.closeWithinMs === undefined ? {} : { closeWithinMs: options.closeWithinMs }),
          };
          const cells: Promise<CellResult>[] = [];
          for (const fault of faults)
            for (const kind of kinds) {
              if (options.select && !options.select({ destination: p.name, fault, kind })) continue;
              const why = skipReason(fault, kind, p, ctx);
              if (why) p.report.skipped.push({ fault, kind, why });
              else if (kind === 'revision' && p.revisionProblem)
                cells.push(
                  Promise.resolve({
                    destination: p.name,
                    fault,
                    kind,
                    violations: [{ phase: 'workflow' as const, what: p.revisionProblem }],
                  }),
                );
              else cells.push(inTurn(() => runCell(ctx, fault, kind)));
            }
          log(`conformance ${run}: ${p.name}: ${cells.length} cells (${carrierName(p.name)} carries its further step)`);
          p.report.cells.push(...(await Promise.all(cells)));
        } catch (error) {
          p.report.error = error instanceof Error ? error.message : String(error);
        }
      }),
    );
  } finally {
    await Promise.allSettled(prepared.map((p) => closeAdapter(p.clean)));
    await Promise.allSettled(prepared.map((p) => p.server.stop()));
    await kit.stop();
  }
  const violations: Violation[] = reports.flatMap((r) => [
    ...(r.error
      ? [{ destination: r.destination, fault: 'setup', kind: 'setup', phase: 'setup', what: r.error } as Violation]
      : []),
    ...r.cells.flatMap((c) =>
      c.violations.map((v): Violation => ({ destination: c.destination, fault: c.fault, kind: c.kind, ...v })),
    ),
  ]);
  const ok = violations.length === 0;
  // The server's output is kept out of the kit's; it is worth reading only when something went wrong.
  if (ok && kit.devServerLog) rmSync(dirname(kit.devServerLog), { recursive: true, force: true });
  const report = {
    callTimeoutMs,
    ...(options.absenceGraceMs === undefined ? {} : { absenceGraceMs: options.absenceGraceMs }),
    destinations: reports,
    violations,
    ok,
    ...(!ok && kit.devServerLog ? { devServerLog: kit.devServerLog } : {}),
  };
  return { ...report, table: conformanceTable(report) };
}
