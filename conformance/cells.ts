// One cell of the matrix: a fault, met by one step kind, in two phases, each with its own proxy and effect.
//   probe     the adapter alone: one send through the fault, then, once the in-flight window (call timeout +
//             absence grace) has passed, the server's own count and a readback; then whatever the send left
//             running is waited for and counted again. What a user relies on is checked against the count.
//   workflow  the whole path: approval, the fault on the step's first send, readback, automatic retries and
//             the kit as the person (approve-retry whenever the effect waits for one, once our last request
//             can no longer be in flight); once it closes and what it left running has settled, exactly one
//             object must carry the step's reference, and the step's fact must name it. An effect that does
//             not close is reported with why: its stage, what it awaits, its failing activity's last error.
// A fault of the provider's shape (the kit's HTTP proxy) faults the provider itself: the step's every send and
// read go through it, the probe's readback too.
import { WorkflowNotFoundError } from '@temporalio/client';
import { SEND_START_LIMIT_MS } from '../activities/attempt-activities.js';
import { closeAdapter } from '../domain/destination.js';
import type {
  DestinationAdapter,
  DestinationContract,
  LookupResult,
  ReadbackRequest,
  ReadbackResult,
  ReleasedPackage,
  SendOutcome,
} from '../domain/destination-contract.js';
import { MAIN_STEP, REVISION_SEPARATOR, STEP_SEPARATOR } from '../domain/idempotency-key.js';
import { type EffectTrail, inFlightClock, readTrail } from '../ledger/trail.js';
import { within } from '../stack/wait-for.js';
import { statusQuery } from '../workflows/contract.js';
import type { Calibration } from './calibration.js';
import { carrierName } from './carrier.js';
import {
  applyFault,
  type FaultName,
  FURTHER_STEP,
  holdMs,
  isProviderFault,
  type StepKind,
  undeclaredSearchLagMs,
} from './faults.js';
import type { KitStack } from './kit-stack.js';
import { lateTimers, retried } from './patience.js';
import type { ProviderShape } from './provider-shape.js';
import { readbackRequest, releasedPackage, sendRequest } from './requests.js';
import type { Router } from './router.js';
import type { ConformanceServer } from './target.js';
import { failureText, whyOpen } from './why-open.js';

export interface CellContext {
  tag: string;
  destination: string;
  contract: DestinationContract;
  server: ConformanceServer;
  /** The destination connected through a proxy at host:port (its connect(), with the target's env). */
  connect: (address: string) => DestinationAdapter;
  calibration: Calibration;
  kit: KitStack;
  router: Router;
  /** The adapter behind the destination's clean proxy: every read, every send after a cell's first. */
  clean: DestinationAdapter;
  callTimeoutMs: number;
  absenceGraceMs: number;
  /** How late past its call timeout a send may answer (a loaded machine's scheduling, not the adapter's). */
  sendSlackMs: number;
  /** The API's shape, from its declaration: what the provider-shape faults change. */
  shape?: ProviderShape;
  /** How long the workflow phase waits for its effect to close (default: closeWithin()). */
  closeWithinMs?: number;
}

export type ProbeOutcome = SendOutcome | { class: 'no answer' | 'threw'; detail: { reason: string } };
export type ProbeReadback = ReadbackResult | { outcome: 'threw'; detail: { reason: string } };

export interface ProbeResult {
  reference: string;
  outcome: ProbeOutcome;
  /** When the send began (ISO). */
  sentAt: string;
  /** When the send answered, after it began (ms); null if it never did within the kit's patience. */
  answeredAfterMs: number | null;
  /** How late this process's timers ran while the send was awaited (a busy machine's share of the wait). */
  timersLateMs: number;
  /** Objects carrying the reference once the in-flight window had passed. */
  landed: number;
  readback: ProbeReadback;
  /** Objects carrying the reference once everything the send left running had settled. */
  landedFinally: number;
  lookup?: { externalId: string; result: LookupResult | { threw: string } };
}

export interface WorkflowResult {
  reference: string;
  effectId: string;
  /** The effect's stage when it closed; null when it did not within the kit's deadline. */
  stage: string | null;
  /** The step's answers and readbacks as the ledger recorded them, in order. */
  path: string[];
  /** Why the faulty first attempt was classified as it was, in the adapter's (or the activity's) words. */
  firstAnswer: string | null;
  attempts: number;
  /** approve-retry decisions the kit made as the person. */
  retriesByKit: number;
  /**
   * Each decision the kit made as the person, when the ledger took it, and when the in-flight window of the step's
   * last request before it ended (its attempt row + when its send began + call timeout + absence grace): the kit
   * decides only after that, so no duplicate it reports is its own doing.
   */
  decisionsByKit: { kind: string; decidedAt: string; windowEndedAt: string | null }[];
  /** Why the effect did not close within the kit's deadline (stage, what it awaits, the failing activity). */
  open?: string;
  objects: number;
  /** Objects under revision 1's reference, for a revision cell. */
  refusedObjects?: number;
  factExternalId: string | null;
}

export interface CellViolation {
  phase: 'probe' | 'workflow';
  what: string;
}

export interface CellResult {
  destination: string;
  fault: FaultName;
  kind: StepKind;
  probe?: ProbeResult;
  workflow?: WorkflowResult;
  violations: CellViolation[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
/** Waiting out a window the adapter itself declares: absence cannot be awaited, only outlasted. */
const until = (time: number) => sleep(time - Date.now());

export function referenceFor(effectId: string, kind: StepKind): string {
  if (kind === 'further') return `${effectId}${STEP_SEPARATOR}${FURTHER_STEP}`;
  if (kind === 'revision') return `${effectId}${REVISION_SEPARATOR}2`;
  return effectId;
}

/** How long a cell waits for what a send left running before it stops waiting (and counts anyway). */
function patience(ctx: CellContext): number {
  return 20_000 + 4 * (ctx.callTimeoutMs + ctx.absenceGraceMs);
}

/** What stands between a cell's adapter and the server, carrying the fault. */
interface FaultLink {
  adapter: DestinationAdapter;
  /** Puts the fault on, before the send it is meant for opens its connection. */
  apply(): Promise<void>;
  /** Resolves, with the time, once nothing the link carries is still on its way (at once for Toxiproxy). */
  settled(): Promise<number | undefined>;
  remove(): Promise<void>;
  /** The provider itself is faulty (the kit's HTTP proxy): reads go through it too. */
  provider: boolean;
}

async function linkFor(ctx: CellContext, name: string, fault: FaultName, reference: string): Promise<FaultLink> {
  const { server, callTimeoutMs: t, absenceGraceMs: grace } = ctx;
  const { proxies } = ctx.kit;
  const own =
    fault === 'send-outlives-deadline'
      ? await proxies.hold(server.upstream, holdMs(t, grace))
      : isProviderFault(fault) && ctx.shape
        ? await proxies.fault({
            upstream: server.upstream,
            shape: ctx.shape,
            fault,
            reference,
            searchLagMs: undeclaredSearchLagMs(t, grace),
          })
        : undefined;
  if (own) {
    try {
      return {
        adapter: ctx.connect(own.address),
        apply: async () => {},
        settled: () => own.settled(),
        remove: () => own.stop(),
        provider: isProviderFault(fault),
      };
    } catch (error) {
      await own.stop();
      throw error;
    }
  }
  const { proxy, port } = await ctx.kit.toxiproxy.proxy(name, server.upstream);
  try {
    return {
      adapter: ctx.connect(`127.0.0.1:${port}`),
      apply: () => applyFault(fault, { proxy, calibration: ctx.calibration, callTimeoutMs: t, server, reference }),
      settled: async () => undefined,
      remove: () => proxy.remove().catch(() => {}),
      provider: false,
    };
  } catch (error) {
    await proxy.remove().catch(() => {});
    throw error;
  }
}

/** A readback as the activity makes it: a thrown error is transient, and tried again. */
async function readBack(adapter: DestinationAdapter, request: ReadbackRequest): Promise<ProbeReadback> {
  try {
    return await retried(() => adapter.readBack(request));
  } catch (error) {
    return { outcome: 'threw', detail: { reason: error instanceof Error ? error.message : String(error) } };
  }
}

async function lookUp(adapter: DestinationAdapter, externalId: string, request: ReadbackRequest) {
  try {
    return await retried(() => adapter.lookup(externalId, request));
  } catch (error) {
    return { threw: error instanceof Error ? error.message : String(error) };
  }
}

export async function probeCell(
  ctx: CellContext,
  fault: FaultName,
  kind: StepKind,
): Promise<{ probe: ProbeResult; violations: string[] }> {
  const { contract, server, callTimeoutMs: t, absenceGraceMs: grace } = ctx;
  const effectId = `${ctx.tag}.${fault}.${kind}.p`;
  const reference = referenceFor(effectId, kind);
  const pkg = releasedPackage(contract, server.sample, reference);
  const link = await linkFor(ctx, `${ctx.tag}-${fault}-${kind}-p`, fault, reference);
  const { adapter } = link;
  // Where the provider itself is faulty, its answers to reads are too.
  const reader = link.provider ? adapter : ctx.clean;
  try {
    await link.apply();
    const began = Date.now();
    const lag = lateTimers();
    const sending = adapter.send(sendRequest(effectId, reference, server.sample.operation, pkg, t)).then(
      (outcome): { outcome: ProbeOutcome; at: number } => ({ outcome, at: Date.now() }),
      (error: unknown) => ({
        outcome: {
          class: 'threw' as const,
          detail: { reason: error instanceof Error ? error.message : String(error) },
        },
        at: Date.now(),
      }),
    );
    // Late timers are this machine's, not the adapter's: the patience grows by how late they ran.
    let answered = await Promise.race([sending, sleep(t + ctx.sendSlackMs).then(() => undefined)]);
    if (!answered && lag.late() > 0) answered = await Promise.race([sending, sleep(lag.late()).then(() => undefined)]);
    const timersLateMs = lag.stop();
    await until(began + t + grace);
    const landed = await retried(() => server.count(reference));
    const request = readbackRequest(reference, pkg, new Date(began));
    const readback = await readBack(reader, request);
    // What the send left running (a session past its deadline, bytes still in the proxy) settles, then the grace.
    const settled = await within(sending, 'the probe send to settle', patience(ctx)).catch(() => undefined);
    const quiet = await within(link.settled(), 'the probe proxy to settle', patience(ctx)).catch(() => undefined);
    await until(Math.max(settled?.at ?? Date.now(), quiet ?? 0) + grace);
    const landedFinally = await retried(() => server.count(reference));
    const outcome = answered?.outcome ?? {
      class: 'no answer' as const,
      detail: {
        reason: settled
          ? `answered ${settled.outcome.class} only after ${settled.at - began} ms`
          : `no answer after ${patience(ctx)} ms`,
      },
    };
    const knownId =
      readback.outcome === 'found'
        ? readback.externalId
        : settled?.outcome.class === 'confirmed'
          ? settled.outcome.externalId
          : undefined;
    const probe: ProbeResult = {
      reference,
      outcome,
      sentAt: new Date(began).toISOString(),
      answeredAfterMs: answered ? answered.at - began : null,
      timersLateMs,
      landed,
      readback,
      landedFinally,
      ...(knownId !== undefined && Math.max(landed, landedFinally) > 0
        ? { lookup: { externalId: knownId, result: await lookUp(reader, knownId, request) } }
        : {}),
    };
    return { probe, violations: probeViolations(ctx, probe) };
  } finally {
    await link.remove();
    await closeAdapter(adapter);
  }
}

/** How far a provider's creation time may be from when we sent: clocks are off by seconds, not minutes. */
const PLAUSIBLE_MS = 5 * 60 * 1000;

/**
 * What is wrong with a time an adapter hands the ledger, or undefined: it must be ISO 8601 text (what the ledger
 * stores; anything else fails the recording, or is taken for the moment it was seen), and name when the object was
 * made, within minutes of when it was sent (a provider's unix seconds read as milliseconds are January 1970).
 */
export function timeProblem(time: string, sentAt: number): string | undefined {
  if (!/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}/.test(time) || !Number.isFinite(Date.parse(time)))
    return `"${time}" is not ISO 8601 text: the ledger cannot record it as given`;
  const off = Date.parse(time) - sentAt;
  if (Math.abs(off) > PLAUSIBLE_MS)
    return `"${time}" is not when the object was made (it was sent at ${new Date(sentAt).toISOString()}): the provider's time was misread`;
  return undefined;
}

/** What a user relies on, for one send, checked against the server's own count. */
export function probeViolations(
  ctx: Pick<CellContext, 'callTimeoutMs' | 'absenceGraceMs' | 'sendSlackMs'>,
  p: ProbeResult,
) {
  const v: string[] = [];
  const { outcome, readback } = p;
  const most = Math.max(p.landed, p.landedFinally);
  if (outcome.class === 'no answer')
    v.push(
      `the send did not answer within its call timeout (${ctx.callTimeoutMs} ms, + ${ctx.sendSlackMs} ms slack + ${p.timersLateMs} ms this process's timers ran late): ${outcome.detail.reason}; the ledger stops waiting at the timeout, and what the call does after it is in no record`,
    );
  if (outcome.class === 'threw') v.push(`the send threw instead of answering a class: ${outcome.detail.reason}`);
  if ((outcome.class === 'not_sent' || outcome.class === 'rejected') && most > 0)
    v.push(`classified ${outcome.class} ("${outcome.detail.reason}"), but the object landed: a retry sends it again`);
  if (most > 1) v.push(`one send left ${most} objects carrying ${p.reference}`);
  if (readback.outcome === 'threw') v.push(`readback failed three times: ${readback.detail.reason}`);
  if (readback.outcome === 'found' && p.landed === 0)
    v.push(`readback found ${readback.externalId}, but no object carrying ${p.reference} had landed`);
  if (readback.outcome === 'absent' && p.landed > 0)
    v.push(`readback said absent ("${readback.detail.reason}"), but the object had landed: a retry sends it again`);
  if (readback.outcome === 'inconclusive' && p.landed > 0)
    v.push(
      `readback was inconclusive ("${readback.detail.reason}"), but the object had landed: the effect waits for a person, whose retry sends it again`,
    );
  const sentAt = Date.parse(p.sentAt);
  const sendTime = outcome.class === 'confirmed' ? timeProblem(outcome.occurredAt, sentAt) : undefined;
  if (sendTime) v.push(`the send's time ${sendTime}`);
  const readTime = readback.outcome === 'found' ? timeProblem(readback.occurredAt, sentAt) : undefined;
  if (readTime) v.push(`readback's time ${readTime}`);
  if (p.landedFinally > p.landed)
    v.push(
      `an object landed after the in-flight window (${ctx.callTimeoutMs} ms call timeout + ${ctx.absenceGraceMs} ms absence grace), when readback had already said ${readback.outcome}`,
    );
  if (p.lookup) {
    const r = p.lookup.result;
    if ('threw' in r) v.push(`lookup(${p.lookup.externalId}) failed: ${r.threw}`);
    else if (!r.exists || !r.matchesRelease)
      v.push(
        `lookup(${p.lookup.externalId}) of the object that landed ${r.exists ? 'says it does not match the release' : 'finds nothing'}: a person's confirm-delivery would be refused`,
      );
    else {
      const lookedTime = timeProblem(r.occurredAt, sentAt);
      if (lookedTime) v.push(`lookup(${p.lookup.externalId})'s time ${lookedTime}`);
    }
  }
  return v;
}

const PERSON = { actor: 'conformance-kit', reason: 'the kit plays the person: retry with the same key' };
/** Past the kit's deadline, an effect whose history grew gets this much longer, again while it grows... */
const PROGRESS_EXTENSION_MS = 20_000;
/** ...for at most this long past the deadline. */
const PROGRESS_EXTENSION_CAP_MS = 120_000;
const MAX_RETRIES_BY_KIT = 3;

/**
 * When the in-flight window of the step's last request ends, on the ledger's clock (as the readback activity
 * judges it): its attempt row, plus when its send began (at the latest SEND_START_LIMIT_MS after the row), plus the
 * call timeout and the absence grace. Undefined before any attempt.
 */
async function inFlightWindow(kit: KitStack, effectId: string, step: string, windowMs: number) {
  const clock = await inFlightClock(kit.ledger.ledger.db, effectId, step);
  if (!clock.lastStartedAt) return undefined;
  const endsAt = clock.lastStartedAt.getTime() + (clock.sendBeganAfterMs ?? SEND_START_LIMIT_MS) + windowMs;
  return { endsAt, now: clock.now.getTime() };
}

/**
 * The kit as the person: approve-retry whenever the effect waits for one, but never while the step's last request
 * may still be in flight (a person told "in flight until …" waits): a retry approved inside the window would make
 * any duplicate the kit then counts its own doing. The effect's result once it closes.
 */
async function playThePerson(ctx: CellContext, effectId: string, step: string, deadline: number) {
  const { kit } = ctx;
  const handle = kit.env.client.workflow.getHandle(effectId);
  const closing = kit.effects.result(effectId).then(
    (result) => ({ result }),
    (error: unknown) => ({ failed: failureText(error) }),
  );
  let retries = 0;
  let asked = 0;
  let until = deadline;
  let events = 0;
  for (;;) {
    const closed = await Promise.race([closing, sleep(300).then(() => 'open' as const)]);
    if (closed !== 'open') return { closed, retries };
    if (Date.now() > until) {
      // A loaded machine runs the same path slower: an effect whose history still grows is given more time, up to
      // the cap; one that stopped moving is reported (a workflow task that keeps failing writes no event).
      const length = (await handle.describe().catch(() => undefined))?.historyLength ?? 0;
      if (length <= events || Date.now() > deadline + PROGRESS_EXTENSION_CAP_MS) return { closed: undefined, retries };
      events = length;
      until = Date.now() + PROGRESS_EXTENSION_MS;
    }
    const status = await handle.query(statusQuery).catch(() => undefined);
    if (
      status?.stage === 'unknown' &&
      status.awaiting?.includes('approve-retry') &&
      retries < MAX_RETRIES_BY_KIT &&
      asked < 3 * MAX_RETRIES_BY_KIT
    ) {
      const window = await inFlightWindow(kit, effectId, step, ctx.callTimeoutMs + ctx.absenceGraceMs).catch(
        () => undefined,
      );
      if (!window || window.now < window.endsAt) continue;
      asked += 1;
      const answer = await kit.effects.decide(effectId, 'approve-retry', PERSON).catch(() => undefined);
      if (answer?.accepted) retries += 1;
    }
  }
}

function stepOf(kind: StepKind): string {
  return kind === 'further' ? FURTHER_STEP : MAIN_STEP;
}

export async function workflowCell(
  ctx: CellContext,
  fault: FaultName,
  kind: StepKind,
): Promise<{ workflow: WorkflowResult; violations: string[] }> {
  const { server, kit, destination, callTimeoutMs: t, absenceGraceMs: grace } = ctx;
  const effectId = `${ctx.tag}.${fault}.${kind}.w`;
  const reference = referenceFor(effectId, kind);
  const step = stepOf(kind);
  const violations: string[] = [];
  const link = await linkFor(ctx, `${ctx.tag}-${fault}-${kind}-w`, fault, reference);
  const { adapter } = link;
  const refusedByKit = kind === 'revision' && !server.refusedPayload;
  const route = ctx.router.route(effectId, {
    faulty: adapter,
    faultyKey: reference,
    refuse: new Set(refusedByKit ? [effectId] : []),
    always: link.provider,
  });
  const approval = {
    effectId,
    destination: kind === 'further' ? carrierName(destination) : destination,
    operation: kind === 'further' ? 'note.then' : server.sample.operation,
    payload: kind === 'further' ? { note: `${fault} on ${destination}` } : server.sample.payload,
    approvedBy: 'conformance-kit',
    authorizationRef: `conformance ${fault} ${kind}`,
  };
  const putFault = () => link.apply();
  const closeWithinMs = ctx.closeWithinMs ?? patience(ctx) + 30_000;
  const deadline = Date.now() + closeWithinMs;
  const result: WorkflowResult = {
    reference,
    effectId,
    stage: null,
    path: [],
    firstAnswer: null,
    attempts: 0,
    retriesByKit: 0,
    decisionsByKit: [],
    objects: 0,
    factExternalId: null,
  };
  try {
    if (kind === 'revision') {
      await kit.effects.approve({ ...approval, payload: server.refusedPayload ?? server.sample.payload });
      const first = await within(kit.effects.result(effectId), `${effectId} revision 1`, patience(ctx));
      if (first.stage !== 'rejected') {
        violations.push(`revision 1 was to be refused, so that a revision follows; it ended ${first.stage}`);
        result.stage = first.stage;
        return { workflow: result, violations };
      }
      await putFault();
      await kit.effects.revise(effectId, {
        payload: server.sample.payload,
        approvedBy: 'conformance-kit',
        authorizationRef: `conformance ${fault} ${kind}`,
        reason: 'the revision the cell is about',
      });
    } else {
      await putFault();
      await kit.effects.approve(approval);
    }
    const played = await playThePerson(ctx, effectId, step, deadline);
    result.retriesByKit = played.retries;
    if (played.closed && 'failed' in played.closed) violations.push(`the workflow failed: ${played.closed.failed}`);
    const closed = played.closed && 'result' in played.closed ? played.closed.result : undefined;
    if (!played.closed) {
      result.open = await whyOpen(kit.env.client, effectId);
      violations.push(
        `the effect did not close within ${Math.round((Date.now() - deadline + closeWithinMs) / 1000)} s: ${result.open}`,
      );
      await kit.env.client.workflow
        .getHandle(effectId)
        .terminate('the conformance kit gave up on it')
        .catch((error: unknown) => {
          if (!(error instanceof WorkflowNotFoundError)) throw error;
        });
    }
    // Whatever the faulty send left running settles under its fault; then the grace; then count.
    await within(Promise.all(route.sends), 'the sends of the cell to settle', patience(ctx)).catch(() => undefined);
    await within(link.settled(), 'the proxy of the cell to settle', patience(ctx)).catch(() => undefined);
    // Outlasting the grace the adapter declares: what it promises is that nothing lands after it.
    await sleep(grace);
    result.objects = await retried(() => server.count(reference));
    if (kind === 'revision') result.refusedObjects = await retried(() => server.count(effectId));
    const trail = await readTrail(kit.ledger.ledger.db, effectId);
    result.stage = closed ? (trail?.effect.stage ?? closed.stage) : null;
    const attempts = trail?.attempts.filter((a) => a.step === step) ?? [];
    const latest = Math.max(0, ...attempts.map((a) => a.releaseRevision));
    result.attempts = attempts.filter((a) => a.releaseRevision === latest).length;
    const ofLatest = new Set(attempts.filter((a) => a.releaseRevision === latest).map((a) => a.attemptId));
    result.path = (trail?.evidence ?? [])
      .filter((e) => e.step === step && (e.attemptId === null || ofLatest.has(e.attemptId)))
      .map((e) =>
        e.kind === 'readback' ? `readback ${e.outcome}` : e.kind === 'human' ? 'confirmed by a person' : e.outcome,
      );
    const answers = (trail?.evidence ?? []).filter(
      (e) => e.step === step && e.kind === 'response' && e.attemptId !== null,
    );
    const first = answers.find((e) => ofLatest.has(e.attemptId as number));
    result.firstAnswer = first
      ? `${first.outcome}: ${String((first.detail as { reason?: unknown } | null)?.reason ?? '')}`
      : null;
    const fact = trail?.facts.find((f) => f.step === step);
    result.factExternalId = fact?.externalId ?? null;
    result.decisionsByKit = trail ? decisionsByKit(trail, step, t + grace) : [];
    if (closed && result.stage !== 'recorded') violations.push(`the effect ended ${result.stage}, not recorded`);
    if (result.objects !== 1)
      violations.push(`the workflow left ${result.objects} objects carrying ${reference} (one is right)`);
    if (result.refusedObjects) violations.push(`refused revision 1 left ${result.refusedObjects} objects`);
    const firstAttempt = attempts.find((a) => a.releaseRevision === latest);
    const factTime =
      fact && firstAttempt ? timeProblem(fact.occurredAt.toISOString(), firstAttempt.startedAt.getTime()) : undefined;
    if (factTime) violations.push(`the fact's time ${factTime}`);
    if (closed && result.stage === 'recorded') {
      const release = trail?.releases.find((r) => r.step === step && r.revision === trail.effect.revision);
      if (!fact || !release) violations.push(`recorded, but the ledger holds no fact for step ${step}`);
      else {
        const seen = await lookUp(
          ctx.clean,
          fact.externalId,
          readbackRequest(release.idempotencyKey, release.package as ReleasedPackage, new Date(0)),
        );
        if ('threw' in seen) violations.push(`lookup of the fact's ${fact.externalId} failed: ${seen.threw}`);
        else if (!seen.exists || !seen.matchesRelease)
          violations.push(
            `the fact names ${fact.externalId}, which ${seen.exists ? 'does not match the release' : 'the destination does not hold'}`,
          );
      }
    }
    return { workflow: result, violations };
  } catch (error) {
    violations.push(`the workflow cell failed: ${error instanceof Error ? error.message : String(error)}`);
    return { workflow: result, violations };
  } finally {
    await link.remove();
    await closeAdapter(adapter);
  }
}

/** The kit's decisions as the ledger took them, each with the end of the in-flight window it followed. */
function decisionsByKit(trail: EffectTrail, step: string, windowMs: number): WorkflowResult['decisionsByKit'] {
  const began = (attemptId: number) => {
    const answer = trail.evidence.find((e) => e.attemptId === attemptId && e.kind === 'response');
    const offset = Number((answer?.detail as { sendBeganAfterMs?: unknown } | null)?.sendBeganAfterMs);
    return Number.isFinite(offset) && offset >= 0 ? offset : SEND_START_LIMIT_MS;
  };
  return trail.decisions
    .filter((d) => d.actor === PERSON.actor)
    .map((d) => {
      const before = trail.attempts.filter((a) => a.step === step && a.startedAt <= d.decidedAt).at(-1);
      const windowEnded = before ? before.startedAt.getTime() + began(before.attemptId) + windowMs : null;
      return {
        kind: d.kind,
        decidedAt: d.decidedAt.toISOString(),
        windowEndedAt: windowEnded === null ? null : new Date(windowEnded).toISOString(),
      };
    });
}
