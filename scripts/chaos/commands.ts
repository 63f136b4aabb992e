// The chaos run's steps, as fast-check model-based commands. Each step acts on the real stack through its
// public surfaces (the approval API, the provider's fault control, signals and the `decide` update, process
// signals, Temporal's terminate, PostgreSQL's pg_terminate_backend) and records what it did. A step that
// the system answers wrongly at once (a bad input accepted, a conflict accepted, a late or malformed decision
// accepted) is a violation on the spot; everything else is judged after the run settles.
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import type fc from 'fast-check';
import { MAIN_STEP } from '../../domain/idempotency-key.js';
import { isTerminal } from '../../domain/stages.js';
import { FAULT_KINDS, type FaultKind } from '../../harness/simulator/faults.js';
import { EffectConflictError, InvalidEffectRequestError, RevisionRefusedError } from '../../ledger/errors.js';
import { readTrail } from '../../ledger/trail.js';
import { spawnSupervised } from '../../stack/reaper.js';
import { approveRetrySignal, confirmDeliverySignal } from '../../workflows/contract.js';
import { waitsForPerson } from '../audit/audit.js';
import { temporalProbe } from '../audit/workflow-probe.js';
import { type DecisionPayload, lookAt, OPERATOR, onDashboard, type SentDecision, sendDecision } from './operator.js';
import type { ChaosStack, RealLink } from './stack.js';

export type EffectKind =
  | 'refund'
  | 'task'
  | 'post'
  | 'refund-refused'
  | 'email'
  | 'event'
  | 'order'
  /** Two outbound steps (keyed-api `task.announce`): a task, then a post on the key-less social feed. */
  | 'task-announced'
  /** Two outbound steps on the real destinations (orders-sql `invoice.send`): an order row, then its email. */
  | 'invoice'
  /** A refund the provider refuses, and refuses again at revision 2 (accepted from revision 3). */
  | 'refund-refused-twice';

export interface ModelEffect {
  effectId: string;
  kind: EffectKind;
  request: Record<string, unknown>;
  /**
   * How the effect entered: approved, by a process that died between the ledger write and the start, or as
   * a poison effect (its workflow can never be started: a summary past the server's search-attribute limit).
   */
  origin: 'approved' | 'died-at-start' | 'died-race' | 'poison';
  /** Approved through the client whose runs continue as new after two readbacks. */
  shortRuns?: boolean;
  /** Operator resets of its run (`temporal workflow reset`, `temporal activity reset`). */
  resets?: number;
  /** When each revision an operator submitted was answered "created" (revision number → time). */
  revisedAt?: Record<number, Date>;
  /** Terminated from the outside. */
  terminated?: boolean;
  /** The payloads of the revisions an operator submitted after a refusal (revision 2 first). */
  revisions?: Array<Record<string, unknown>>;
}

export interface Model {
  effects: ModelEffect[];
  next: number;
  kills: number;
  devRestarts: number;
  dies: number;
  terminations: number;
  limits: { effects: number; kills: number; devRestarts: number; dies: number; terminations: number };
  /** How often each of the newer commands ran, against `caps` (at most that many per run). */
  used: Record<string, number>;
  caps: Record<string, number>;
}

export interface Violation {
  kind: string;
  effectId: string | null;
  detail: string;
}

export interface Real {
  stack: ChaosStack;
  prefix: string;
  violations: Violation[];
  /** Things that happened to the harness, not to the system (a step that could not run). */
  notes: string[];
  counts: Record<string, number>;
  /** What the run did to each effect, with when: the raw material of a violation's story. */
  touched: Array<{ at: Date; effectId: string; what: string }>;
  touch(effectId: string, what: string): void;
  log(line: string): void;
  /** Every decision an operator sent, with what the effect showed then (scripts/chaos/operator.ts). */
  sent: SentDecision[];
  /** Steps that go on in the background (a fault armed when a later step starts): the settle phase waits for them. */
  background: Set<Promise<unknown>>;
  track(promise: Promise<unknown>): void;
}

export function newReal(stack: ChaosStack, prefix: string, log: (line: string) => void): Real {
  const touched: Real['touched'] = [];
  const background = new Set<Promise<unknown>>();
  return {
    stack,
    prefix,
    violations: [],
    notes: [],
    counts: {},
    touched,
    touch: (effectId, what) => touched.push({ at: new Date(), effectId, what }),
    log,
    sent: [],
    background,
    track(promise) {
      const settled = promise.catch((error: unknown) => {
        this.notes.push(`background step failed: ${(error as Error).message?.slice(0, 200)}`);
      });
      background.add(settled);
      void settled.finally(() => background.delete(settled));
    },
  };
}

/** Waits for what the run's steps left going in the background. */
export async function quiesceReal(real: Real): Promise<void> {
  while (real.background.size) await Promise.allSettled([...real.background]);
}

export function newModel(limits: Model['limits'], caps: Model['caps'] = {}): Model {
  return { effects: [], next: 0, kills: 0, devRestarts: 0, dies: 0, terminations: 0, limits, used: {}, caps };
}

/** Takes one use of a capped command; false when its cap is reached (default cap: 2 per run). */
export function mayUse(m: Readonly<Model>, name: string): boolean {
  return (m.used[name] ?? 0) < (m.caps[name] ?? 2);
}
export function use(m: Model, name: string): void {
  m.used[name] = (m.used[name] ?? 0) + 1;
}

export const bump = (real: Real, what: string, by = 1) => {
  real.counts[what] = (real.counts[what] ?? 0) + by;
};

/** The simulator's faults but its injected 422 (a revision test's refusal): the seeds keep their fault mix. */
export const CHAOS_FAULT_KINDS = FAULT_KINDS.filter((k) => k !== 'status_422_before_commit');

export const TITLES = ['Prepare preview', 'Quarterly report', 'Prepare preview', 'Launch post'];

/** The run's next effect: its number, ID and request, put in the model (approved unless `extra` says otherwise). */
export function newEffect(m: Model, r: Real, kind: EffectKind, title: string, extra: Partial<ModelEffect> = {}) {
  const n = m.next++;
  const effectId = `${r.prefix}-${n}`;
  const request = buildRequest(effectId, kind, n, title);
  m.effects.push({ effectId, kind, request, origin: 'approved', ...extra });
  return { n, effectId, request };
}

export function buildRequest(effectId: string, kind: EffectKind, n: number, title: string): Record<string, unknown> {
  const common = { effectId, approvedBy: 'chaos@example.com', authorizationRef: 'CHAOS-RUN' };
  switch (kind) {
    case 'refund':
    case 'refund-refused':
      return {
        ...common,
        destination: 'keyed-api',
        operation: 'refund.create',
        // The provider refuses a non-positive amount (HTTP 400): a definitive rejection.
        payload: { charge: `ch_${n}`, amount: kind === 'refund' ? 100 + n : -1, currency: 'EUR' },
      };
    case 'task':
      return {
        ...common,
        destination: 'keyed-api',
        operation: 'task.create',
        payload: { title, request: `request-${n}` },
      };
    case 'post':
      return {
        ...common,
        destination: 'social-feed',
        operation: 'post.publish',
        payload: { channel: 'chaos', text: title },
      };
    case 'email':
      return {
        ...common,
        destination: 'email-smtp',
        operation: 'email.send',
        payload: { to: `customer-${n}@example.com`, subject: title, text: `Request ${n}` },
      };
    case 'event':
      return {
        ...common,
        destination: 'nats-jetstream',
        operation: 'event.publish',
        payload: { type: 'chaos.happened', data: { title, n } },
      };
    case 'order':
      return {
        ...common,
        destination: 'orders-sql',
        operation: 'order.create',
        payload: { customer: `cus_${n}`, sku: 'SKU-1', quantity: 1 + (n % 5), amountCents: 100 * n },
      };
    case 'task-announced':
      return {
        ...common,
        destination: 'keyed-api',
        operation: 'task.announce',
        payload: { title, request: `request-${n}`, channel: 'chaos', text: `${title} is up` },
      };
    case 'invoice':
      return {
        ...common,
        destination: 'orders-sql',
        operation: 'invoice.send',
        payload: {
          customer: `cus_${n}`,
          sku: 'SKU-1',
          quantity: 1 + (n % 5),
          amountCents: 100 * n,
          to: `customer-${n}@example.com`,
          subject: `Invoice ${n}: ${title}`,
          text: `Order ${n} is confirmed.`,
        },
      };
    case 'refund-refused-twice':
      return {
        ...common,
        destination: 'keyed-api',
        operation: 'refund.create',
        payload: { charge: `ch_${n}`, amount: -1, currency: 'EUR' },
      };
  }
}

/**
 * What an operator submits as the revision of a refused effect: the same destination, operation and target
 * (the charge, the request, the channel...), a payload the provider accepts (a refund's amount positive).
 */
export function revised(kind: EffectKind, payload: Record<string, unknown>, revision: number): Record<string, unknown> {
  switch (kind) {
    case 'refund':
    case 'refund-refused':
      return { ...payload, amount: 4000 + revision };
    // Refused again at revision 2 (the provider refuses a non-positive amount), accepted from revision 3 on.
    case 'refund-refused-twice':
      return { ...payload, amount: revision < 3 ? -revision : 4000 + revision };
    case 'invoice':
      return { ...payload, text: `${String(payload.text)} (revision ${revision})` };
    case 'post':
      return { ...payload, text: `${String(payload.text)} (revision ${revision})` };
    case 'task':
      return { ...payload, title: `${String(payload.title)} (revision ${revision})` };
    case 'task-announced':
      return { ...payload, text: `${String(payload.text)} (revision ${revision})` };
    case 'email':
      return { ...payload, text: `${String(payload.text)} (revision ${revision})` };
    case 'event':
      return { ...payload, data: { ...(payload.data as Record<string, unknown>), revision } };
    case 'order':
      return { ...payload, amountCents: Number(payload.amountCents) + revision };
  }
}

/** The same request with other parameters (what a conflicting approval sends). */
function edited(kind: EffectKind, payload: Record<string, unknown>): Record<string, unknown> {
  switch (kind) {
    case 'post':
      return { ...payload, text: `${String(payload.text)} (edited)` };
    case 'task':
    case 'task-announced':
      return { ...payload, title: `${String(payload.title)} (edited)` };
    case 'invoice':
    case 'email':
      return { ...payload, subject: `${String(payload.subject)} (edited)` };
    case 'event':
      return { ...payload, data: { edited: true } };
    case 'order':
      return { ...payload, quantity: Number(payload.quantity) + 1 };
    default:
      return { ...payload, amount: 999_999 };
  }
}

export function pick<T>(list: readonly T[], index: number): T | undefined {
  return list.length ? list[index % list.length] : undefined;
}

export abstract class Step implements fc.AsyncCommand<Model, Real> {
  check(_m: Readonly<Model>): boolean {
    return true;
  }
  abstract run(m: Model, r: Real): Promise<void>;
  abstract toString(): string;
}

// ---- approvals --------------------------------------------------------------

export class Approve extends Step {
  constructor(
    readonly kind: EffectKind,
    readonly copies: number,
    readonly title: string,
  ) {
    super();
  }
  override check(m: Readonly<Model>) {
    return m.effects.length < m.limits.effects;
  }
  async run(m: Model, r: Real) {
    const { effectId, request } = newEffect(m, r, this.kind, this.title);
    bump(r, 'approvals');
    if (this.copies > 1) bump(r, 'concurrent duplicate deliveries', this.copies - 1);
    // All copies at the same moment: exactly one registers it, the others join it.
    const results = await Promise.allSettled(
      Array.from({ length: this.copies }, () => r.stack.effects.approve(request)),
    );
    const created = results.filter((x) => x.status === 'fulfilled' && x.value.created).length;
    for (const x of results)
      if (x.status === 'rejected') r.notes.push(`approve ${effectId} failed: ${(x.reason as Error).message}`);
    if (created > 1)
      r.violations.push({
        kind: 'approval_door',
        effectId,
        detail: `${created} of ${this.copies} concurrent deliveries said "created"`,
      });
  }
  toString() {
    return `approve(${this.kind}${this.copies > 1 ? ` ×${this.copies} at once` : ''}, "${this.title}")`;
  }
}

export class Reapprove extends Step {
  constructor(readonly index: number) {
    super();
  }
  override check(m: Readonly<Model>) {
    return m.effects.some((e) => e.origin === 'approved');
  }
  async run(m: Model, r: Real) {
    const effect = pick(
      m.effects.filter((e) => e.origin === 'approved'),
      this.index,
    );
    if (!effect) return;
    bump(r, 'late duplicate deliveries');
    try {
      const result = await r.stack.effects.approve(effect.request);
      if (result.created)
        r.violations.push({
          kind: 'approval_door',
          effectId: effect.effectId,
          detail: 'a repeated approval created the effect again',
        });
    } catch (error) {
      if (error instanceof EffectConflictError)
        r.violations.push({
          kind: 'approval_door',
          effectId: effect.effectId,
          detail: 'the same request again was called a conflict',
        });
      else r.notes.push(`re-approve ${effect.effectId} failed: ${(error as Error).message}`);
    }
  }
  toString() {
    return `reapprove(#${this.index})`;
  }
}

export class Conflict extends Step {
  constructor(readonly index: number) {
    super();
  }
  override check(m: Readonly<Model>) {
    return m.effects.length > 0;
  }
  async run(m: Model, r: Real) {
    const effect = pick(m.effects, this.index);
    if (!effect) return;
    bump(r, 'same ID, other parameters');
    const payload = edited(effect.kind, effect.request.payload as Record<string, unknown>);
    try {
      await r.stack.effects.approve({ ...effect.request, payload });
      r.violations.push({
        kind: 'approval_door',
        effectId: effect.effectId,
        detail: 'the same ID with other parameters was accepted',
      });
    } catch (error) {
      if (!(error instanceof EffectConflictError))
        r.notes.push(`conflicting approval of ${effect.effectId} failed otherwise: ${(error as Error).message}`);
    }
  }
  toString() {
    return `approve-conflict(#${this.index})`;
  }
}

export const BAD_INPUTS = [
  'no effect ID',
  'empty effect ID',
  'effect ID with a space',
  'unknown destination',
  'unknown operation',
  'NUL in the payload',
  'extra payload field',
] as const;

export class BadInput extends Step {
  constructor(readonly variant: (typeof BAD_INPUTS)[number]) {
    super();
  }
  async run(m: Model, r: Real) {
    const effectId = `${r.prefix}-bad-${m.next++}`;
    const base = buildRequest(effectId, 'task', 0, 'Prepare preview');
    const payload = base.payload as Record<string, unknown>;
    const request: Record<string, unknown> = {
      'no effect ID': { ...base, effectId: undefined },
      'empty effect ID': { ...base, effectId: '' },
      'effect ID with a space': { ...base, effectId: `${effectId} x` },
      'unknown destination': { ...base, destination: 'fax-machine' },
      'unknown operation': { ...base, operation: 'task.delete' },
      'NUL in the payload': { ...base, payload: { ...payload, title: 'nul\u0000here' } },
      'extra payload field': { ...base, payload: { ...payload, priority: 'high' } },
    }[this.variant];
    bump(r, 'bad inputs');
    try {
      await r.stack.effects.approve(request);
      r.violations.push({ kind: 'approval_door', effectId, detail: `bad input accepted: ${this.variant}` });
    } catch (error) {
      if (!(error instanceof InvalidEffectRequestError))
        r.violations.push({
          kind: 'approval_door',
          effectId,
          detail: `bad input (${this.variant}) answered ${(error as Error).name}`,
        });
    }
    const rows = await r.stack.ledger.sql`SELECT 1 FROM effects WHERE effect_id = ${effectId}`;
    if (rows.length)
      r.violations.push({ kind: 'approval_door', effectId, detail: `bad input (${this.variant}) left a ledger row` });
  }
  toString() {
    return `bad-input(${this.variant})`;
  }
}

/** A process approving an effect is killed between approval's ledger write and the workflow start. */
export class DieAfterLedgerWrite extends Step {
  constructor(
    readonly kind: EffectKind,
    readonly mode: 'at-start' | 'race',
    /** Put before the number in its effect ID (`zz-` sorts it after the run's other effects). */
    readonly idTag = '',
  ) {
    super();
  }
  override check(m: Readonly<Model>) {
    return m.dies < m.limits.dies && m.effects.length < m.limits.effects;
  }
  async run(m: Model, r: Real) {
    m.dies++;
    const n = m.next++;
    const effectId = `${r.prefix}-${this.idTag}${n}`;
    const request = buildRequest(effectId, this.kind, n, 'Prepare preview');
    m.effects.push({
      effectId,
      kind: this.kind,
      request,
      origin: this.mode === 'at-start' ? 'died-at-start' : 'died-race',
    });
    bump(r, `approver killed after the ledger write (${this.mode})`);
    const entry = fileURLToPath(new URL('./approve-child.ts', import.meta.url));
    const { child } = spawnSupervised(process.execPath, ['--import', 'tsx', entry], {
      env: {
        ...r.stack.childEnvironment('chaos-approver'),
        CHAOS_REQUEST: JSON.stringify(request),
        CHAOS_DIE: this.mode,
        CHAOS_CALL_TIMEOUT_MS: String(r.stack.options.callTimeoutMs),
        CHAOS_READBACK_INTERVAL_MS: String(r.stack.options.readbackIntervalMs),
      },
    });
    let stderr = '';
    child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<string>((resolve) =>
      child.once('exit', (code, signal) => resolve(signal ?? String(code))),
    );
    if (this.mode === 'race') {
      const deadline = Date.now() + 30_000;
      while (child.exitCode === null && Date.now() < deadline) {
        const rows = await r.stack.ledger.sql`SELECT 1 FROM effects WHERE effect_id = ${effectId}`;
        if (rows.length) {
          child.kill('SIGKILL');
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    }
    const how = await exited;
    const rows = await r.stack.ledger.sql`SELECT stage FROM effects WHERE effect_id = ${effectId}`;
    r.log(`approver of ${effectId} ended by ${how}; ledger row: ${rows.length ? rows[0]?.stage : 'none'}`);
    r.touch(effectId, `approver killed after the ledger write (${this.mode})`);
    if (how !== 'SIGKILL' && how !== '0') r.notes.push(`approver of ${effectId} exited ${how}: ${stderr.slice(-300)}`);
  }
  toString() {
    return `approver-dies-after-ledger-write(${this.kind}, ${this.mode})`;
  }
}

// ---- the provider -----------------------------------------------------------

const READ_PATHS = ['/v1/objects', '/v1/idempotency_keys', '/social/v1/posts'];
const WRITE_PATHS = ['/v1/objects', '/social/v1/posts', null];

export class Fault extends Step {
  constructor(
    readonly kind: FaultKind,
    readonly pathIndex: number,
    readonly delayFactor: number,
  ) {
    super();
  }
  private path() {
    return this.kind === 'read_error_500'
      ? READ_PATHS[this.pathIndex % READ_PATHS.length]
      : WRITE_PATHS[this.pathIndex % WRITE_PATHS.length];
  }
  async run(_m: Model, r: Real) {
    const path = this.path();
    const delayMs = Math.round(r.stack.options.callTimeoutMs * this.delayFactor);
    bump(r, `fault ${this.kind}`);
    await r.stack.simulator.fault(this.kind, { ...(path ? { path } : {}), delayMs });
  }
  toString() {
    const delay = this.kind.startsWith('delay') ? ` ${this.delayFactor.toFixed(1)}× call timeout` : '';
    return `fault(${this.kind}${this.path() ? ` on ${this.path()}` : ''}${delay})`;
  }
}

// ---- processes --------------------------------------------------------------

export class KillWorker extends Step {
  constructor(
    readonly slot: number,
    readonly restartAfterMs: number,
  ) {
    super();
  }
  override check(m: Readonly<Model>) {
    return m.kills < m.limits.kills;
  }
  async run(m: Model, r: Real) {
    m.kills++;
    await r.stack.killWorker(this.slot, this.restartAfterMs);
    r.log(`SIGKILLed worker ${this.slot % r.stack.options.workers}`);
  }
  toString() {
    return `sigkill-worker(${this.slot}, restart after ${this.restartAfterMs} ms)`;
  }
}

export class RestartDevServer extends Step {
  constructor(readonly downMs: number) {
    super();
  }
  override check(m: Readonly<Model>) {
    return m.devRestarts < m.limits.devRestarts;
  }
  async run(m: Model, r: Real) {
    m.devRestarts++;
    if (!r.stack.ownsServer) {
      bump(r, 'dev-server restarts skipped (a lane shares the server)');
      return;
    }
    const started = Date.now();
    await r.stack.restartDevServer(this.downMs);
    r.log(
      `restarted ${r.stack.cluster ? 'the Temporal server process (SIGKILL)' : 'the Temporal dev server'} (${Date.now() - started} ms)`,
    );
  }
  toString() {
    return `restart-temporal-dev-server(down ${this.downMs} ms)`;
  }
}

export class TerminatePg extends Step {
  async run(_m: Model, r: Real) {
    const n = await r.stack.terminateWorkerConnections();
    r.log(`pg_terminate_backend: ${n} worker connection(s)`);
  }
  toString() {
    return 'pg-terminate-worker-connections';
  }
}

export class TerminateRun extends Step {
  constructor(readonly index: number) {
    super();
  }
  override check(m: Readonly<Model>) {
    return m.terminations < m.limits.terminations && m.effects.some((e) => e.origin === 'approved');
  }
  async run(m: Model, r: Real) {
    const effect = pick(
      m.effects.filter((e) => e.origin === 'approved'),
      this.index,
    );
    if (!effect) return;
    m.terminations++;
    try {
      await r.stack.client.workflow.getHandle(effect.effectId).terminate('chaos: terminated from the outside');
      effect.terminated = true;
      r.touch(effect.effectId, 'run terminated from the outside');
      bump(r, 'runs terminated from the outside');
      r.log(`terminated the run of ${effect.effectId}`);
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError))
        r.notes.push(`terminate ${effect.effectId}: ${(error as Error).message}`);
    }
  }
  toString() {
    return `terminate-run(#${this.index})`;
  }
}

export class Pause extends Step {
  constructor(readonly ms: number) {
    super();
  }
  async run() {
    await new Promise((resolve) => setTimeout(resolve, this.ms));
  }
  toString() {
    return `pause(${this.ms} ms)`;
  }
}

// ---- people -----------------------------------------------------------------

/** Payloads no decision may accept, each with the decision it is sent as. */
const GARBAGE: Array<{ kind: 'approve-retry' | 'confirm-delivery'; payload: unknown }> = [
  { kind: 'approve-retry', payload: {} },
  { kind: 'approve-retry', payload: { actor: '', reason: 'x' } },
  { kind: 'confirm-delivery', payload: 'approve it' },
  { kind: 'approve-retry', payload: { actor: OPERATOR, reason: 'x', extra: true } },
  { kind: 'confirm-delivery', payload: { actor: OPERATOR, reason: 'found it' } }, // a confirm without evidence
  { kind: 'approve-retry', payload: null },
];

/**
 * An operator following docs/operators.md: find an effect that awaits a person, read what it awaits, look
 * at the provider's own dashboard, then confirm with the object found there or, finding none, approve a
 * retry with the same key (the guide allows it). Or: decide late (on a finished effect), twice, or garbage.
 */
export class Decide extends Step {
  constructor(
    readonly style: 'prompt' | 'repeated' | 'late' | 'malformed',
    readonly via: 'signal' | 'update',
    readonly index: number,
  ) {
    super();
  }
  override check(m: Readonly<Model>) {
    return m.effects.length > 0;
  }
  async run(m: Model, r: Real) {
    const ours = new Set(m.effects.map((e) => e.effectId));
    const stage = this.style === 'late' ? 'recorded' : 'unknown';
    const candidates = (await r.stack.effects.listByStage(stage, 1000)).filter((e) => ours.has(e.effectId));
    const chosen = pick(candidates, this.index);
    if (!chosen) {
      bump(r, `decisions skipped (no ${stage} effect)`);
      return;
    }
    const effectId = chosen.effectId;
    bump(r, `decisions ${this.style} via ${this.via}`);
    if (this.style === 'malformed') return this.garbage(r, effectId);
    if (this.style === 'late') {
      const seen = await lookAt(r, effectId);
      const payload = { actor: OPERATOR, reason: 'late: checked the dashboard' };
      const sent = await sendDecision(r, effectId, 'approve-retry', payload, { via: this.via, seen });
      if (sent.answer === 'accepted')
        r.violations.push({
          kind: 'decision_door',
          effectId,
          detail: 'a late approve-retry on a recorded effect was accepted',
        });
      return;
    }
    const probe = await temporalProbe(r.stack.client)(effectId);
    if (!waitsForPerson(probe) || !probe.awaiting) return; // the guide: act when the effect asks for a person
    // The step the effect waits on (a multi-step effect's later step has its own destination), and that
    // step's latest release: the object to look for carries its key (`effectID~step`, `#r2` in a
    // revision-scoped revision) and its body.
    const seen = await lookAt(r, effectId);
    if (!seen.release) return;
    const found = await onDashboard(r, seen);
    const decision = found ? 'confirm-delivery' : 'approve-retry';
    const payload: DecisionPayload = found
      ? { actor: OPERATOR, reason: 'found it on the provider dashboard', externalId: found.id }
      : { actor: OPERATOR, reason: 'checked the provider dashboard: nothing there' };
    r.log(
      `operator: ${effectId}${seen.step === MAIN_STEP ? '' : ` (step ${seen.step})`} awaits "${probe.awaiting.slice(0, 80)}"; ${decision}${found ? ` ${found.id}` : ''}`,
    );
    const first = await sendDecision(r, effectId, decision, payload, {
      via: this.via,
      seen,
      ...(this.via === 'update' ? { decisionId: randomUUID() } : {}),
    });
    if (this.style === 'repeated') {
      // The same person's decision again through the other door, or the same update again (a client retry).
      if (first.decisionId)
        await sendDecision(r, effectId, decision, payload, {
          via: 'update',
          seen,
          decisionId: first.decisionId,
          resent: first,
        });
      else await sendDecision(r, effectId, decision, payload, { via: 'update', seen });
    }
  }

  private async garbage(r: Real, effectId: string) {
    const handle = r.stack.client.workflow.getHandle(effectId);
    const { kind, payload } = GARBAGE[this.index % GARBAGE.length] ?? { kind: 'approve-retry', payload: {} };
    r.touch(effectId, `malformed ${kind} via ${this.via}: ${JSON.stringify(payload)}`);
    try {
      if (this.via === 'signal') {
        await handle.signal(kind === 'confirm-delivery' ? confirmDeliverySignal : approveRetrySignal, payload);
        return;
      }
      const answer = await r.stack.effects.decide(effectId, kind, payload as { actor: string; reason: string });
      if (answer.accepted)
        r.violations.push({
          kind: 'decision_door',
          effectId,
          detail: `a malformed decision was accepted: ${JSON.stringify(payload)}`,
        });
    } catch (error) {
      if (error instanceof WorkflowNotFoundError || error instanceof WorkflowUpdateFailedError) return;
      r.notes.push(`malformed decision on ${effectId}: ${(error as Error).message.slice(0, 200)}`);
    }
  }
  toString() {
    return `decide(${this.style} via ${this.via}, #${this.index})`;
  }
}

/**
 * An operator revising an effect the provider refused (README, "Revisions"; docs/operators.md): only an
 * effect the ledger shows as `rejected` (read like the Decide step reads it), the same destination,
 * operation and target, a payload the provider accepts. Sometimes submitted twice at once (a retry after a
 * client timeout): exactly one of the two may say "created".
 */
export class Revise extends Step {
  constructor(
    readonly index: number,
    readonly copies: number,
  ) {
    super();
  }
  override check(m: Readonly<Model>) {
    return m.effects.length > 0;
  }
  async run(m: Model, r: Real) {
    const ours = new Map(m.effects.map((e) => [e.effectId, e]));
    const candidates = (await r.stack.effects.listByStage('rejected', 1000)).filter((e) => ours.has(e.effectId));
    const chosen = pick(candidates, this.index);
    const effect = chosen && ours.get(chosen.effectId);
    if (!effect) {
      bump(r, 'revisions skipped (no rejected effect)');
      return;
    }
    await submitRevision(r, effect, this.copies);
  }
  toString() {
    return `revise-refused(#${this.index}${this.copies > 1 ? ` ×${this.copies} at once` : ''})`;
  }
}

/**
 * An operator's revision of a rejected effect, `copies` times at once (a retry after a client timeout, two
 * operators): exactly one may say "created"; the others are answered as taken or refused, never created.
 * Returns how many said created (0 when the effect was no longer rejected).
 */
export async function submitRevision(r: Real, effect: ModelEffect, copies: number): Promise<number> {
  const trail = await readTrail(r.stack.ledger.db, effect.effectId);
  if (trail?.effect.stage !== 'rejected') return 0;
  const revision = trail.effect.revision + 1;
  const latest = effect.revisions?.at(-1) ?? (effect.request.payload as Record<string, unknown>);
  const payload = revised(effect.kind, latest, revision);
  const request = {
    payload,
    approvedBy: OPERATOR,
    authorizationRef: 'CHAOS-REVISION',
    reason: `the provider refused revision ${revision - 1}; corrected`,
  };
  bump(r, 'revisions submitted');
  if (copies > 1) bump(r, 'revisions submitted twice at once');
  r.touch(effect.effectId, `operator revision ${revision}${copies > 1 ? ` ×${copies} at once` : ''}`);
  const results = await Promise.allSettled(
    Array.from({ length: copies }, () => r.stack.effects.revise(effect.effectId, request)),
  );
  const created = results.filter((x) => x.status === 'fulfilled' && x.value.created).length;
  if (created >= 1) {
    effect.revisions = [...(effect.revisions ?? []), payload];
    effect.revisedAt = { ...effect.revisedAt, [revision]: new Date() };
  }
  r.log(`operator: revised ${effect.effectId} (revision ${revision}, ${created} of ${copies} created)`);
  if (created > 1)
    r.violations.push({
      kind: 'revision_door',
      effectId: effect.effectId,
      detail: `${created} of ${copies} concurrent submissions of revision ${revision} said "created"`,
    });
  for (const x of results) {
    if (x.status === 'fulfilled') continue;
    const error = x.reason as Error;
    // A second submission racing the first may be refused by the ledger (it is no longer rejected).
    if (copies > 1 && created === 1 && error instanceof RevisionRefusedError) continue;
    if (error instanceof InvalidEffectRequestError || error instanceof RevisionRefusedError)
      r.violations.push({
        kind: 'revision_door',
        effectId: effect.effectId,
        detail: `a valid revision ${revision} of a rejected effect was refused: ${error.message.slice(0, 200)}`,
      });
    else r.notes.push(`revise ${effect.effectId} failed: ${error.message.slice(0, 200)}`);
  }
  return created;
}

export type NetFaultKind = 'refuse' | 'latency' | 'drop' | 'reset' | 'cut';

/** A network fault between the workers and a real destination (Toxiproxy), held a while, healed by itself. */
export class NetFault extends Step {
  constructor(
    readonly link: RealLink,
    readonly kind: NetFaultKind,
    readonly ms: number,
  ) {
    super();
  }
  async run(_m: Model, r: Real) {
    bump(r, `network ${this.kind} on ${this.link}`);
    r.stack.networkFault(this.link, this.kind, this.ms);
  }
  toString() {
    return `network(${this.kind} on ${this.link}, ${this.ms} ms)`;
  }
}

export const isTerminalStage = (stage: string) => isTerminal(stage as never);
