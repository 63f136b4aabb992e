// One chaos run and its verdict: generated steps against the real stack (fast-check model-based commands),
// then a settle phase that only waits (it approves and decides nothing: the system must heal on its own),
// then the invariants, read from the ledger, the destinations' own records, Temporal and the provider's
// request log. Used by `npm run chaos` (scripts/chaos.ts), test/chaos.test.ts and test/chaos-planted.test.ts.
import fc from 'fast-check';
import { MAIN_STEP, parseKey } from '../../domain/idempotency-key.js';
import { TERMINAL_STAGES } from '../../domain/stages.js';
import { readTrail } from '../../ledger/trail.js';
import { type AuditReport, audit, waitsForPerson } from '../audit/audit.js';
import type { DestinationObject } from '../audit/destination-records.js';
import { readRequestLog } from '../audit/request-log.js';
import { temporalProbe } from '../audit/workflow-probe.js';
import {
  isTerminalStage,
  type Model,
  newModel,
  newReal,
  quiesceReal,
  type Real,
  type Step,
  type Violation,
} from './commands.js';
import {
  type DecisionCounts,
  decisionChecks,
  type RunHistory,
  ranOnSkewedWorker,
  readHistories,
  revisionRunChecks,
} from './decision-checks.js';
import { chaosSteps, FULL_MIX, MIXES, type Mix } from './generator.js';
import { ChaosStack, type ChaosStackOptions } from './stack.js';
import { unstartable } from './unstartable.js';

export interface ChaosOptions {
  /** Effects approved per run (approximately: the generator stops approving at this many). */
  effects: number;
  /** Worker SIGKILLs per run at most. */
  kills: number;
  devRestarts: number;
  /** Approvers killed between the ledger write and the workflow start, per run at most. */
  dies: number;
  terminations: number;
  seeds: number;
  seed?: number;
  /** Exactly these seeds (the test's fixed ones); overrides seeds/seed. */
  seedList?: number[];
  /** Part of every effect ID (`chaos-<seed><tag>-<run>-…`): a second try of a seed on shared servers keeps its objects apart. */
  runTag?: string;
  path?: string;
  workers: number;
  callTimeoutMs: number;
  /** How long the settle phase waits at most for every effect to finish or wait for a person. */
  settleMs: number;
  /** How long effects with no running workflow are given to be resumed (the reconciler's period). */
  reconcileMs: number;
  /** Time budget per seed, shrinking a failure included (0: report the first failing step list as is). */
  shrinkMs: number;
  stackOptions?: Partial<ChaosStackOptions>;
  /** A stack already started (a lane of the test's): used as it is, and left running. */
  stack?: ChaosStack;
  /** The generator's mix: a name from generator.ts's MIXES, or weights per group; default the full mix. */
  mix?: string | Mix;
  /** How many times each newer command may run per run (cross-step, resent, revision-race, poison, reset, …). */
  caps?: Record<string, number>;
  /** FillReconcilerPage's count (the reconciler's page plus one); 0: not drawn. */
  pageFill?: number;
  /**
   * Seconds the skewed worker's clock runs ahead of PostgreSQL's (negative: behind); 'seeded' (default): 3 to 8
   * ahead, from the run; 0: no skew. Needs libfaketime (scripts/setup.sh) and two workers or more.
   */
  skewSeconds?: number | 'seeded';
  log: (line: string) => void;
}

export interface RunVerdict {
  prefix: string;
  steps: number;
  effects: number;
  /** The run's effects per destination, and per final stage. */
  perDestination: Record<string, Record<string, number>>;
  /** Effects with more than one outbound step, and per final stage. */
  multiStep: Record<string, number>;
  /** Effects revised after a refusal (latest revision above 1), per final stage; and revisions in all. */
  revised: Record<string, number>;
  revisions: number;
  /** Effects on the real destinations (email, JetStream, the orders database), any step. */
  realDestination: number;
  /** Decisions the ledger holds, by kind and answer; and how many an operator sent. */
  decisions: DecisionCounts;
  /** Operator resets (workflow and activity) the server took. */
  resets: number;
  /** Effects with an activity taken up by the skewed worker, and its skew (seconds). */
  skewed: { effects: number; seconds: number };
  counts: Record<string, number>;
  stackStats: ChaosStack['stats'];
  audit: AuditReport;
  violations: Violation[];
  /** Effects with no running workflow at the end, and how each came to be so (the reconciler should have resumed them). */
  stuck: Array<{ effectId: string; story: string }>;
  /** The run's poison effects (no start can succeed): whether the ledger or the reconciler shows why, and what. */
  unstartable: Array<{ effectId: string; shown: boolean; why: string }>;
  notes: string[];
  /** For each effect with a finding: what happened to it, in order (ledger trail, objects, what the run did). */
  stories: Record<string, string>;
  settledInMs: number;
  settleTimedOut: boolean;
}

export interface SeedOutcome {
  seed: number;
  failed: boolean;
  runs: number;
  path?: string;
  /** The (shrunk) failing step list. */
  counterexample?: string;
  verdict?: RunVerdict;
  /** The first (unshrunk) failing run's verdict. */
  firstFailure?: RunVerdict;
  error?: string;
  wallMs: number;
}

/** Effects stuck because of what the run did to them (an approver killed, a run terminated). */
export function explainedStuck(v: RunVerdict): Set<string> {
  return new Set(v.stuck.filter((s) => !s.story.startsWith('unexplained')).map((s) => s.effectId));
}

/**
 * Which findings fail a run: every one. An effect the run itself left without a workflow (an approver
 * killed, a run terminated) must have been resumed by the ledger reconciler by the end of the settle
 * phase; its story still says how it got there.
 */
export function violationsOf(v: RunVerdict): Violation[] {
  // An effect no start can succeed for (a poison effect) has no workflow by nature: it must show why (a
  // violation of its own when it does not), and is not also called stuck or lost.
  const shown = new Set(v.unstartable.filter((u) => u.shown).map((u) => u.effectId));
  const fromAudit = v.audit.findings
    .filter((f) => !(f.effectId && shown.has(f.effectId) && (f.kind === 'stuck' || f.kind === 'lost')))
    .map((f) => ({ kind: f.kind, effectId: f.effectId, detail: f.detail }));
  return [...v.violations, ...fromAudit];
}

const IN_FLIGHT = /may still be in flight/;

/**
 * Waits (bounded) until the workflow has taken every decision the run sent by signal: a row in the ledger carrying
 * its tag, or the effect ended. A signal returns once the server holds it, not once the workflow applied it; an
 * effect that still shows "a human decision" then is not settled (seed 2026120692: two approve-retry signals sent
 * as the steps ended, the settle counted the effect as waiting for a person, and the audit a moment later found
 * it mid-attempt: lost).
 */
async function signalsTaken(stack: ChaosStack, real: Real, ms: number): Promise<void> {
  const signalled = real.sent.filter((s) => s.via === 'signal');
  const taken = async () => {
    for (const sent of signalled) {
      const [row] = await stack.ledger.sql<{ taken: boolean }[]>`
        SELECT EXISTS (SELECT 1 FROM decisions WHERE effect_id = ${sent.effectId}
                       AND position(${sent.tag} in reason) > 0)
            OR EXISTS (SELECT 1 FROM effects WHERE effect_id = ${sent.effectId}
                       AND stage = ANY(${[...TERMINAL_STAGES]})) AS taken`;
      if (!row?.taken) return false;
    }
    return true;
  };
  const deadline = Date.now() + ms;
  while (!(await taken()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 250));
}

/** Waits (bounded) until every effect of the run is terminal or visibly waiting for a person; touches nothing. */
export async function settle(
  stack: ChaosStack,
  prefix: string,
  options: { settleMs: number; reconcileMs: number; log: (line: string) => void },
): Promise<{ ms: number; timedOut: boolean }> {
  const started = Date.now();
  const probe = temporalProbe(stack.client, 5000);
  let lastLine = '';
  for (;;) {
    const rows = await stack.ledger.sql<{ effectId: string; stage: string }[]>`
      SELECT effect_id AS "effectId", stage FROM effects WHERE effect_id LIKE ${`${prefix}-%`}`;
    const open = rows.filter((r) => !isTerminalStage(r.stage));
    let waiting = 0;
    let notRunning = 0;
    let moving = 0;
    for (const row of open) {
      const view = await probe(row.effectId).catch(
        () => ({ status: 'UNREACHABLE' }) as { status: string; awaiting?: string },
      );
      if (view.status !== 'RUNNING') notRunning++;
      // Waiting out the window in which its last request may still land is not settled: it reads back then.
      else if (waitsForPerson(view) && !IN_FLIGHT.test(view.awaiting ?? '')) waiting++;
      else moving++;
    }
    // A request the provider still holds may yet land (and be found, or show an effect given up beside it).
    const held = await stack.simulator.held().catch(() => 0);
    moving += held;
    const elapsed = Date.now() - started;
    const line = `settling: ${rows.length - open.length} terminal, ${waiting} waiting for a person, ${moving} moving${held ? ` (${held} held by the provider)` : ''}, ${notRunning} with no running workflow`;
    if (line !== lastLine) options.log(`${line} (${Math.round(elapsed / 1000)} s)`);
    lastLine = line;
    if (moving === 0 && notRunning === 0) return { ms: elapsed, timedOut: false };
    if (moving === 0 && elapsed >= options.reconcileMs) return { ms: elapsed, timedOut: false };
    if (elapsed >= options.settleMs) return { ms: elapsed, timedOut: true };
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}

/** One line: what happened to an effect, in time order, seconds from its approval. */
async function storyOf(stack: ChaosStack, real: Real, effectId: string, objects: DestinationObject[]): Promise<string> {
  const trail = await readTrail(stack.ledger.db, effectId);
  if (!trail) return 'not in the ledger';
  const t0 = trail.effect.approvedAt.getTime();
  const events: Array<{ at: number; text: string }> = [];
  for (const a of trail.attempts) {
    const answer = trail.evidence.find((e) => e.attemptId === a.attemptId && e.kind === 'response');
    const reason = (answer?.detail as { reason?: string } | undefined)?.reason;
    events.push({
      at: a.startedAt.getTime(),
      text: `${a.step === MAIN_STEP ? '' : `${a.step} `}attempt ${a.attemptNumber} → ${answer ? `${answer.outcome}${answer.httpStatus ? ` ${answer.httpStatus}` : ''}${reason ? ` (${reason.slice(0, 60)})` : ''}` : 'no answer'}`,
    });
  }
  for (const e of trail.evidence.filter((x) => x.kind !== 'response'))
    events.push({
      at: e.recordedAt.getTime(),
      text: `${e.kind} ${e.outcome}${e.externalId ? ` ${e.externalId}` : ''}`,
    });
  for (const d of trail.decisions)
    events.push({
      at: d.decidedAt.getTime(),
      text: `decision ${d.kind} ${d.accepted ? 'accepted' : `refused${d.rejectionReason ? ` (${d.rejectionReason.slice(0, 120)})` : ''}`}`,
    });
  // A further step's object carries `effectID~step`: it is this effect's too.
  for (const o of objects.filter((x) => x.effectId !== null && parseKey(x.effectId)?.effectId === effectId))
    events.push({
      at: Date.parse(o.createdAt),
      text: `object ${o.id}${o.effectId === effectId ? '' : ` (${o.effectId})`} created at the provider`,
    });
  for (const x of real.touched.filter((y) => y.effectId === effectId))
    events.push({ at: x.at.getTime(), text: `run: ${x.what}` });
  for (const fact of trail.facts)
    events.push({
      at: fact.recordedAt.getTime(),
      text: `${fact.step === MAIN_STEP ? '' : `${fact.step} `}fact ${fact.externalId} (${fact.confirmedBy})`,
    });
  events.sort((a, b) => a.at - b.at);
  return `${trail.effect.destination} ${trail.effect.operation}, now ${trail.effect.stage}: ${events
    .map((e) => `+${((e.at - t0) / 1000).toFixed(1)}s ${e.text}`)
    .join('; ')}`;
}

/**
 * A readback that called an object absent over complete coverage while the object was already there: the read
 * began (the ledger's clock, in the evidence) after the object was created (the destination's clock, the same
 * machine's; a second's allowance). Such an "absent" is what a same-key retry without a person rests on, and what
 * a person reads before approving one.
 */
async function falseAbsences(stack: ChaosStack, prefix: string, objects: DestinationObject[]): Promise<Violation[]> {
  const absences = await stack.ledger.sql<{ effectId: string; reference: string | null; readBegan: string | null }[]>`
    SELECT effect_id AS "effectId", detail->>'reference' AS reference, detail->>'readBegan' AS "readBegan"
      FROM provider_evidence
     WHERE effect_id LIKE ${`${prefix}-%`} AND kind = 'readback' AND outcome = 'absent' AND coverage = 'complete'`;
  const found: Violation[] = [];
  for (const absence of absences) {
    if (!absence.reference || !absence.readBegan) continue;
    const began = Date.parse(absence.readBegan);
    const there = objects.filter((o) => o.effectId === absence.reference && Date.parse(o.createdAt) < began - 1000);
    if (there.length)
      found.push({
        kind: 'absent_beside_object',
        effectId: absence.effectId,
        detail: `a readback begun at ${absence.readBegan} called ${absence.reference} absent over complete coverage; ${there.map((o) => `${o.id} was created at ${o.createdAt}`).join(', ')}`,
      });
  }
  return found;
}

/**
 * Revised and multi-step effects, checked from the destinations' own records beside the audit: each step of
 * an effect has at most one object (whatever revision made it); a step with a fact has exactly one, carrying
 * the key and body of that step's latest release (a revised effect's object is the latest revision's).
 */
async function revisionChecks(stack: ChaosStack, prefix: string, objects: DestinationObject[]): Promise<Violation[]> {
  const found: Violation[] = [];
  const releases = await stack.ledger.sql<
    { effectId: string; step: string; revision: number; key: string; body: string; destination: string }[]
  >`SELECT r.effect_id AS "effectId", r.step, r.revision, r.idempotency_key AS key, r.body_sha256 AS body,
           r.destination
      FROM releases r JOIN effects e USING (effect_id)
     WHERE r.effect_id LIKE ${`${prefix}-%`}
       AND (e.revision > 1 OR (SELECT count(DISTINCT step) FROM releases x WHERE x.effect_id = r.effect_id) > 1)`;
  const facts = await stack.ledger.sql<{ effectId: string; step: string; externalId: string }[]>`
    SELECT effect_id AS "effectId", step, external_id AS "externalId" FROM facts WHERE effect_id LIKE ${`${prefix}-%`}`;
  // Never two objects under one (effect, step, revision key): grouped by the exact reference stamped in them.
  const byKey = new Map<string, DestinationObject[]>();
  for (const o of objects)
    if (o.effectId?.startsWith(`${prefix}-`)) byKey.set(o.effectId, [...(byKey.get(o.effectId) ?? []), o]);
  for (const [key, same] of byKey)
    if (same.length > 1)
      found.push({
        kind: 'duplicate_per_key',
        effectId: parseKey(key)?.effectId ?? key,
        detail: `${same.length} objects carry ${key}: ${same.map((o) => o.id).join(', ')}`,
      });
  const latest = new Map<string, (typeof releases)[number]>();
  for (const r of releases) {
    const ref = `${r.effectId} ${r.step}`;
    const seen = latest.get(ref);
    if (!seen || seen.revision < r.revision) latest.set(ref, r);
  }
  for (const [ref, release] of latest) {
    const mine = objects.filter((o) => {
      const named = o.effectId === null ? null : parseKey(o.effectId);
      return named?.effectId === release.effectId && named.step === release.step;
    });
    const which = `step ${release.step}, revision ${release.revision}`;
    if (mine.length > 1)
      found.push({
        kind: 'duplicate',
        effectId: release.effectId,
        detail: `${mine.length} objects for ${which}: ${mine.map((o) => `${o.id} (${o.effectId})`).join(', ')}`,
      });
    const fact = facts.find((f) => `${f.effectId} ${f.step}` === ref);
    if (!fact) continue;
    const object = mine.find((o) => o.id === fact.externalId);
    if (!object || object.effectId !== release.key || object.bodySha256 !== release.body)
      found.push({
        kind: 'revision_body',
        effectId: release.effectId,
        detail: `${which}: the fact names ${fact.externalId}, ${object ? `carrying ${object.effectId} and body ${object.bodySha256?.slice(0, 12)}…` : 'not among the step’s objects'}; the latest release is ${release.key} with body ${release.body.slice(0, 12)}…`,
      });
  }
  return found;
}

/** The invariants after settling. */
export async function verify(
  stack: ChaosStack,
  real: Real,
  model: Model | null,
  settled: { ms: number; timedOut: boolean },
  steps: number,
): Promise<RunVerdict> {
  const prefix = real.prefix;
  // Faults still queued would hit the audit's own reads: the provider is healthy again for the verdict.
  await fetch(`${stack.simulator.url}/_control/faults`, { method: 'DELETE' });
  const report = await audit(stack.ledger.sql, {
    destinations: stack.destinationRecords(),
    workflows: temporalProbe(stack.client, 5000),
    requestLog: await readRequestLog(stack.simulator.url),
    effectFilter: (id) => id.startsWith(`${prefix}-`),
    requireSettled: true,
  });
  // Approvals that answered but left nothing in the ledger would be lost too.
  const violations = [...real.violations];
  // A worker process must survive what the run does to its surroundings (a dropped database connection, say).
  for (const crash of stack.crashes) {
    const why = crash.tail.match(/^(\w*Error: .*)$/m)?.[1] ?? crash.tail.trim().split('\n').at(-1) ?? '';
    violations.push({
      kind: 'worker_crash',
      effectId: null,
      detail: `worker ${crash.slot} exited ${crash.exit} on its own: ${why}`,
    });
  }
  if (model) {
    const inLedger = new Set(
      (
        await stack.ledger.sql<
          { effectId: string }[]
        >`SELECT effect_id AS "effectId" FROM effects WHERE effect_id LIKE ${`${prefix}-%`}`
      ).map((r) => r.effectId),
    );
    for (const e of model.effects)
      if (e.origin === 'approved' && !inLedger.has(e.effectId) && !real.notes.some((n) => n.includes(e.effectId)))
        violations.push({ kind: 'lost', effectId: e.effectId, detail: 'approved, but the ledger has no row' });
  }
  const stuck = report.findings
    .filter((f) => f.kind === 'stuck' && f.effectId)
    .map((f) => {
      const effect = model?.effects.find((e) => e.effectId === f.effectId);
      const story = !effect
        ? 'unexplained'
        : effect.origin === 'died-at-start'
          ? 'its approver was killed between the ledger write and the workflow start; nothing resumed it'
          : effect.origin === 'died-race'
            ? 'its approver was killed right after the ledger write (before the start left); nothing resumed it'
            : effect.terminated
              ? 'its run was terminated from the outside; nothing resumed it'
              : effect.origin === 'poison'
                ? 'a poison effect: no start of its workflow can succeed on this server'
                : 'unexplained';
      return { effectId: f.effectId as string, story: `${story} (${f.detail})` };
    });
  const stories: Record<string, string> = {};
  const storyIds = new Set(
    [...violations, ...report.findings]
      .map((f) => f.effectId)
      .filter((id): id is string => !!id && id.startsWith(prefix)),
  );
  const objects = await Promise.all(stack.destinationRecords().map((d) => d.objects()));
  for (const effectId of storyIds) stories[effectId] = await storyOf(stack, real, effectId, objects.flat());
  const perDestination: RunVerdict['perDestination'] = {};
  for (const row of await stack.ledger.sql<{ destination: string; stage: string; n: number }[]>`
    SELECT destination, stage, count(*)::int AS n FROM effects WHERE effect_id LIKE ${`${prefix}-%`}
    GROUP BY destination, stage ORDER BY destination, stage`)
    perDestination[row.destination] = { ...perDestination[row.destination], [row.stage]: row.n };
  const multiStep: Record<string, number> = {};
  for (const row of await stack.ledger.sql<{ stage: string; n: number }[]>`
    SELECT e.stage, count(*)::int AS n FROM effects e
    WHERE e.effect_id LIKE ${`${prefix}-%`}
      AND (SELECT count(DISTINCT step) FROM releases r WHERE r.effect_id = e.effect_id) > 1
    GROUP BY e.stage ORDER BY e.stage`)
    multiStep[row.stage] = row.n;
  const revised: Record<string, number> = {};
  let revisions = 0;
  for (const row of await stack.ledger.sql<{ stage: string; n: number; revisions: number }[]>`
    SELECT stage, count(*)::int AS n, sum(revision - 1)::int AS revisions FROM effects
    WHERE effect_id LIKE ${`${prefix}-%`} AND revision > 1 GROUP BY stage ORDER BY stage`) {
    revised[row.stage] = row.n;
    revisions += row.revisions;
  }
  violations.push(...(await revisionChecks(stack, prefix, objects.flat())));
  violations.push(...(await falseAbsences(stack, prefix, objects.flat())));
  // Every run's history of every effect: decisions re-sent across runs, the skewed worker's share.
  const histories = new Map<string, RunHistory[]>();
  const ids = (
    await stack.ledger.sql<{ effectId: string }[]>`
      SELECT effect_id AS "effectId" FROM effects WHERE effect_id LIKE ${`${prefix}-%`}`
  ).map((r) => r.effectId);
  for (const id of ids) histories.set(id, await readHistories(stack.client, id).catch(() => []));
  const decided = await decisionChecks(stack, prefix, real.sent, histories);
  violations.push(...decided.violations);
  for (const effect of model?.effects ?? [])
    if (effect.revisedAt)
      violations.push(...revisionRunChecks(effect.revisedAt, effect.effectId, histories.get(effect.effectId) ?? []));
  const unstartableEffects = [];
  for (const effect of model?.effects.filter((e) => e.origin === 'poison') ?? []) {
    const seen = await unstartable(stack, effect.effectId);
    if (!seen) continue;
    unstartableEffects.push(seen);
    if (!seen.shown)
      violations.push({
        kind: 'unstartable_hidden',
        effectId: effect.effectId,
        detail: `no start of its workflow can succeed, and nothing shows it: ${seen.why}`,
      });
  }
  for (const f of violations)
    if (f.effectId && !stories[f.effectId])
      stories[f.effectId] = await storyOf(stack, real, f.effectId, objects.flat());
  // What an operator sees (the workflow's status, the UI's EffectStage) is what the ledger says, once settled.
  const ledgerStage = new Map(
    (
      await stack.ledger.sql<{ effectId: string; stage: string }[]>`
        SELECT effect_id AS "effectId", stage FROM effects WHERE effect_id LIKE ${`${prefix}-%`}`
    ).map((r) => [r.effectId, r.stage]),
  );
  for (const open of report.inProgress) {
    const inLedger = ledgerStage.get(open.effectId);
    if (inLedger && open.stage !== inLedger && waitsForPerson({ status: 'RUNNING', awaiting: open.awaiting ?? '' }))
      violations.push({
        kind: 'stage_mismatch',
        effectId: open.effectId,
        detail: `its workflow shows ${open.stage}, the ledger ${inLedger}, while it waits for a person (${(open.awaiting ?? '').slice(0, 100)})`,
      });
  }
  // UNKNOWN means a request may have left: not when every attempt of the waiting step was answered "not sent".
  for (const row of await stack.ledger.sql<{ effectId: string; attempts: number }[]>`
    SELECT e.effect_id AS "effectId", count(a.attempt_id)::int AS attempts
      FROM effects e JOIN attempts a ON a.effect_id = e.effect_id
     WHERE e.effect_id LIKE ${`${prefix}-%`} AND e.stage = 'unknown'
       AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.effect_id = a.effect_id AND f.step = a.step)
     GROUP BY e.effect_id
    HAVING bool_and(EXISTS (SELECT 1 FROM provider_evidence v WHERE v.attempt_id = a.attempt_id
                              AND v.kind = 'response' AND v.outcome = 'not_sent'))`)
    violations.push({
      kind: 'unknown_without_send',
      effectId: row.effectId,
      detail: `in UNKNOWN, yet every one of its ${row.attempts} attempt(s) was answered "not sent": nothing can have left`,
    });
  // The same, passed through: a look for a step's object when every attempt of the step had been answered "not
  // sent" treats as unknown what cannot be, even if a same-key retry recorded the effect after it (since v7 the
  // end state alone no longer shows it: seed 7101's resumed run).
  for (const row of await stack.ledger.sql<{ effectId: string; step: string; attempts: number }[]>`
    SELECT r.effect_id AS "effectId", r.step, count(a.attempt_id)::int AS attempts
      FROM provider_evidence r
      JOIN attempts a ON a.effect_id = r.effect_id AND a.step = r.step AND a.started_at <= r.recorded_at
     WHERE r.effect_id LIKE ${`${prefix}-%`} AND r.kind = 'readback'
     GROUP BY r.evidence_id, r.effect_id, r.step
    HAVING bool_and(EXISTS (SELECT 1 FROM provider_evidence v WHERE v.attempt_id = a.attempt_id
                              AND v.kind = 'response' AND v.outcome = 'not_sent' AND v.evidence_id < r.evidence_id))`) {
    if (violations.some((v) => v.kind === 'unknown_without_send' && v.effectId === row.effectId)) continue;
    violations.push({
      kind: 'unknown_without_send',
      effectId: row.effectId,
      detail: `read back step ${row.step} when every one of its ${row.attempts} attempt(s) had been answered "not sent"`,
    });
  }
  const [real_] = await stack.ledger.sql<{ n: number }[]>`
    SELECT count(DISTINCT effect_id)::int AS n FROM releases
    WHERE effect_id LIKE ${`${prefix}-%`} AND destination IN ('email-smtp', 'nats-jetstream', 'orders-sql')`;
  const skewedEffects = [...histories.values()].filter((h) => ranOnSkewedWorker(h, stack.skewedPids)).length;
  return {
    prefix,
    steps,
    perDestination,
    multiStep,
    revised,
    revisions,
    realDestination: real_?.n ?? 0,
    decisions: decided.counts,
    resets: Object.entries(real.counts)
      .filter(([k]) => k.startsWith('resets ('))
      .reduce((a, [, n]) => a + n, 0),
    skewed: { effects: skewedEffects, seconds: stack.skewedPids.size ? (stack.options.skewSeconds ?? 0) : 0 },
    unstartable: unstartableEffects,
    stories,
    effects: model?.effects.length ?? 0,
    counts: real.counts,
    stackStats: { ...stack.stats },
    audit: report,
    violations,
    stuck,
    notes: real.notes,
    settledInMs: settled.ms,
    settleTimedOut: settled.timedOut,
  };
}

export function summarize(v: RunVerdict): string[] {
  const c = v.audit.counts;
  const failing = violationsOf(v);
  const lost = c.lost + v.violations.filter((x) => x.kind === 'lost').length;
  return [
    `run ${v.prefix}: ${v.steps} steps, ${v.effects} effects; settled in ${Math.round(v.settledInMs / 1000)} s${v.settleTimedOut ? ' (TIMED OUT)' : ''}`,
    `  did: ${Object.entries(v.counts)
      .sort()
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
    `  stack: ${v.stackStats.workerKills} worker SIGKILLs, ${v.stackStats.workerRestarts} worker restarts (${v.stackStats.workerCrashes} died on their own), ${v.stackStats.devServerRestarts} dev-server restarts, ${v.stackStats.pgTerminations} pg connections terminated, ${v.stackStats.networkFaults} network faults (Toxiproxy)`,
    `  effects per destination: ${Object.entries(v.perDestination)
      .map(
        ([d, stages]) =>
          `${d} ${Object.values(stages).reduce((a, b) => a + b, 0)} (${Object.entries(stages)
            .map(([stage, n]) => `${stage} ${n}`)
            .join(', ')})`,
      )
      .join('; ')}`,
    `  multi-step effects: ${Object.values(v.multiStep).reduce((a, b) => a + b, 0)} (${Object.entries(v.multiStep)
      .map(([stage, n]) => `${stage} ${n}`)
      .join(', ')}); revised effects: ${Object.values(v.revised).reduce((a, b) => a + b, 0)} (${Object.entries(
      v.revised,
    )
      .map(([stage, n]) => `${stage} ${n}`)
      .join(', ')}), ${v.revisions} revision(s)`,
    `  new situations: real-destination effects ${v.realDestination}; decisions sent ${v.decisions.sent}, in the ledger ${Object.entries(
      v.decisions.byKind,
    )
      .sort()
      .map(([k, n]) => `${k} ${n}`)
      .join(
        ', ',
      )}; resets ${v.resets}; skewed-clock effects ${v.skewed.effects} (${v.skewed.seconds >= 0 ? '+' : ''}${v.skewed.seconds} s); unstartable effects ${v.unstartable.length} (${v.unstartable.filter((u) => u.shown).length} showing why)`,
    `  decision invariants: applied to another step ${v.violations.filter((x) => x.kind === 'decision_other_step').length}, another episode ${v.violations.filter((x) => x.kind === 'decision_other_episode').length}, another revision ${v.violations.filter((x) => x.kind === 'decision_other_revision').length}, applied twice ${v.violations.filter((x) => x.kind === 'decision_applied_twice').length}`,
    `  invariants: duplicates ${c.duplicate}, lost ${lost}, stuck ${c.stuck} (explained by the run: ${v.stuck.filter((s) => !s.story.startsWith('unexplained')).length}), ` +
      `objects without a fact ${c.object_without_fact + c.object_without_effect}, facts without their object ${c.fact_object_missing + c.fact_object_differs}, ` +
      `keys not from the effect ID ${c.foreign_key}, requests before their attempt row ${v.audit.checked.requests === null ? 'not checked' : c.request_before_attempt}, ` +
      `door violations ${v.violations.filter((x) => x.kind.endsWith('_door')).length}, ` +
      `step/revision objects wrong ${v.violations.filter((x) => x.kind === 'duplicate' || x.kind === 'revision_body').length}, ` +
      `workers that died on their own ${v.violations.filter((x) => x.kind === 'worker_crash').length}`,
    `  checked: ${v.audit.checked.effects} effects, ${v.audit.checked.facts} facts, ${v.audit.checked.objects} objects, ${v.audit.checked.workflows ?? '-'} workflows, ${v.audit.checked.requests ?? '-'} provider requests`,
    ...v.audit.skipped.map((s) => `  skipped ${s}`),
    ...v.audit.inProgress.map((p) => `  open ${p.effectId}: ${p.stage}, awaiting ${p.awaiting ?? 'nothing'}`),
    ...v.stuck.map((s) => `  stuck ${s.effectId}: ${s.story}`),
    ...v.audit.findings
      .filter((f) => f.kind !== 'stuck' && f.effectId && explainedStuck(v).has(f.effectId))
      .map((f) => `  (follows from stuck) ${f.kind} ${f.effectId}: ${f.detail}`),
    ...failing.map((f) => `  VIOLATION ${f.kind} ${f.effectId ?? '-'}: ${f.detail}`),
    ...Object.entries(v.stories).map(([id, story]) => `  story ${id}: ${story}`),
    ...v.notes.slice(0, 20).map((n) => `  note: ${n}`),
  ];
}

/** A mix by name (generator.ts's MIXES), as JSON weights (`{"revision-race": 1}`), or as given. */
export function resolveMix(mix: ChaosOptions['mix']): Mix {
  if (mix === undefined) return FULL_MIX;
  if (typeof mix !== 'string') return mix;
  if (mix.trim().startsWith('{')) return JSON.parse(mix) as Mix;
  const named = MIXES[mix];
  if (!named)
    throw new Error(`no mix ${mix}; the mixes are ${Object.keys(MIXES).join(', ')}, or JSON weights per group`);
  return named;
}

/**
 * A step whose own harness call fails (PostgreSQL out of connections on a shared machine, a CLI timing out) is
 * a note, not a verdict: what the system did wrong is in the violations, each with its step.
 */
function tolerant(step: Step): Step {
  return new Proxy(step, {
    get(target, key, receiver) {
      if (key !== 'run') return Reflect.get(target, key, receiver);
      return async (m: Model, r: Real) => {
        try {
          await target.run(m, r);
        } catch (error) {
          r.notes.push(`step ${String(target)} could not run: ${(error as Error).message?.slice(0, 200)}`);
        }
      };
    },
  });
}

/** FillReconcilerPage's count: as asked, else the stack's reconciler page plus one. */
function pageFillFor(options: ChaosOptions, stack: ChaosStack): number {
  if (options.pageFill) return options.pageFill;
  return stack.options.reconcilerPageSize ? stack.options.reconcilerPageSize + 1 : 0;
}

/** The skewed worker's offset for a run: 3 to 8 s ahead, from the seed, unless the options say otherwise. */
function skewFor(asked: ChaosOptions['skewSeconds'], seed: number): number {
  if (typeof asked === 'number') return asked;
  return 3 + (seed % 6);
}

/** The newer commands' caps per run: about one per ten effects in the full mix; an aimed mix, one per effect. */
function capsFor(options: ChaosOptions, mix: Mix): Record<string, number> {
  const scaled = mix === FULL_MIX ? Math.max(1, Math.round(options.effects / 10)) : options.effects;
  return {
    'cross-step': scaled + 1,
    'revision-race': scaled,
    resent: Math.max(1, Math.round(scaled / 2)),
    'in-flight-retry': scaled,
    'abandon-in-flight': scaled,
    'terminated-in-pause': scaled,
    'keyless-retry': scaled,
    'keyless-abandon': scaled,
    poison: 1,
    'page-fill': 1,
    reset: scaled,
    ...options.caps,
  };
}

/** Runs `seeds` seeds (or the one given), one fast-check property run each, shrinking a failure within shrinkMs. */
export async function runChaos(options: ChaosOptions): Promise<SeedOutcome[]> {
  const owned = !options.stack;
  const stack =
    options.stack ??
    new ChaosStack({
      workers: options.workers,
      callTimeoutMs: options.callTimeoutMs,
      readbackIntervalMs: 3000,
      readbacksPerRun: 10,
      // The poison effect's ID (110 characters, which the ledger takes) is past this; every other ID stays below.
      maxIdLength: 100,
      // A run past 100 events is told to continue as new: a long "not sent" streak reaches it in seconds.
      suggestContinueAsNewAt: 100,
      // Five unfinished effects per reconciler page: a run crosses pages with a handful (FillReconcilerPage).
      reconcilerPageSize: 5,
      log: options.log,
      ...options.stackOptions,
    });
  const outcomes: SeedOutcome[] = [];
  // Ctrl-C / SIGTERM: take the dev server, the simulator, the workers and the database down with us.
  const onSignal = () => void stack.stop().finally(() => process.exit(130));
  if (owned) {
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    await stack.start();
  }
  try {
    const firstSeed = options.seed ?? Date.now() % 2_147_483_647;
    const seeds = options.seedList ?? Array.from({ length: options.seeds }, (_, i) => firstSeed + i);
    for (const seed of seeds) {
      const started = Date.now();
      options.log(`seed ${seed}: starting (replay: npm run chaos -- --seed ${seed})`);
      let runs = 0;
      let last: RunVerdict | undefined;
      let firstFailure: RunVerdict | undefined;
      let lastFailure: RunVerdict | undefined;
      const limits = {
        effects: options.effects,
        kills: options.kills,
        devRestarts: options.devRestarts,
        dies: options.dies,
        terminations: options.terminations,
      };
      const mix = resolveMix(options.mix);
      const generated = chaosSteps(Math.max(10, options.effects * 3), { mix, pageFill: pageFillFor(options, stack) });
      const property = fc.asyncProperty(generated, async (cmds) => {
        runs++;
        const prefix = `chaos-${seed}${options.runTag ?? ''}-${runs}`;
        stack.options.skewSeconds = skewFor(options.skewSeconds, seed);
        await stack.reset(`${seed}-${runs}`);
        const real = newReal(stack, prefix, (line) => options.log(`  ${line}`));
        const model = newModel(limits, capsFor(options, mix));
        let steps = 0;
        const counted = [...cmds].length;
        options.log(`run ${runs} (${prefix}): up to ${counted} steps`);
        await fc.asyncModelRun(() => ({ model, real }), [...cmds].map(tolerant));
        steps = counted;
        await quiesceReal(real);
        await stack.quiesce();
        await signalsTaken(stack, real, 30_000);
        const settled = await settle(stack, prefix, { ...options, log: (line) => options.log(`  ${line}`) });
        const verdict = await verify(stack, real, model, settled, steps);
        last = verdict;
        for (const line of summarize(verdict)) options.log(line);
        const failing = violationsOf(verdict);
        if (failing.length) {
          firstFailure ??= verdict;
          lastFailure = verdict;
          throw new Error(`${failing.length} violation(s): ${[...new Set(failing.map((f) => f.kind))].join(', ')}`);
        }
      });
      const result = await fc.check(property, {
        seed,
        numRuns: 1,
        ...(options.path ? { path: options.path } : {}),
        ...(options.shrinkMs > 0 ? { interruptAfterTimeLimit: options.shrinkMs } : { endOnFailure: true }),
      });
      outcomes.push({
        seed,
        failed: result.failed,
        runs,
        ...(result.failed
          ? {
              path: result.counterexamplePath ?? undefined,
              counterexample: result.counterexample ? result.counterexample[0].map(String).join('; ') : undefined,
              error:
                result.errorInstance instanceof Error
                  ? result.errorInstance.message
                  : String(result.errorInstance ?? ''),
            }
          : {}),
        ...((result.failed ? lastFailure : last)
          ? { verdict: (result.failed ? lastFailure : last) as RunVerdict }
          : {}),
        ...(firstFailure ? { firstFailure } : {}),
        wallMs: Date.now() - started,
      });
    }
  } finally {
    if (owned) {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      await stack.stop();
    }
  }
  return outcomes;
}

/** One row of the run's table: what it generated and what it found. */
export interface TableRow {
  seed: string;
  effects: number;
  multiStep: number;
  revised: number;
  realDestination: number;
  decisions: Record<string, number>;
  resets: number;
  skewed: number;
  faults: number;
  duplicates: number;
  lost: number;
  stuck: number;
  decisionViolations: number;
  otherViolations: number;
}

const sum = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);

export function tableRow(seed: number | string, v: RunVerdict): TableRow {
  const failing = violationsOf(v);
  const explained = explainedStuck(v);
  const count = (kinds: string[]) => failing.filter((f) => kinds.includes(f.kind)).length;
  return {
    seed: String(seed),
    effects: v.effects,
    multiStep: sum(v.multiStep),
    revised: sum(v.revised),
    realDestination: v.realDestination,
    decisions: v.decisions.byKind,
    resets: v.resets,
    skewed: v.skewed.effects,
    faults: Object.entries(v.counts)
      .filter(([k]) => /^(fault|network) /.test(k))
      .reduce((a, [, n]) => a + n, 0),
    duplicates: new Set(
      failing.filter((f) => f.kind === 'duplicate' || f.kind === 'duplicate_per_key').map((f) => f.effectId),
    ).size,
    lost: failing.filter((f) => f.kind === 'lost' && !(f.effectId && explained.has(f.effectId))).length,
    stuck: count(['stuck']),
    decisionViolations: count([
      'decision_other_step',
      'decision_other_episode',
      'decision_other_revision',
      'decision_applied_twice',
    ]),
    otherViolations: failing.length,
  };
}

/** The table `npm run chaos` prints: per seed, then the total. */
export function formatTable(rows: TableRow[]): string[] {
  const total: TableRow = {
    seed: 'total',
    effects: 0,
    multiStep: 0,
    revised: 0,
    realDestination: 0,
    decisions: {},
    resets: 0,
    skewed: 0,
    faults: 0,
    duplicates: 0,
    lost: 0,
    stuck: 0,
    decisionViolations: 0,
    otherViolations: 0,
  };
  for (const r of rows) {
    for (const k of [
      'effects',
      'multiStep',
      'revised',
      'realDestination',
      'resets',
      'skewed',
      'faults',
      'duplicates',
      'lost',
      'stuck',
      'decisionViolations',
      'otherViolations',
    ] as const)
      total[k] += r[k];
    for (const [k, n] of Object.entries(r.decisions)) total.decisions[k] = (total.decisions[k] ?? 0) + n;
  }
  const decisions = (d: Record<string, number>) => {
    const of = (kind: string) => `${d[`${kind} accepted`] ?? 0}/${d[`${kind} refused`] ?? 0}`;
    return `${of('approve-retry')} ${of('confirm-delivery')} ${of('abandon')} ${d['unrecognised refused'] ?? 0}`;
  };
  const header = [
    'seed',
    'effects',
    'multi-step',
    'revised',
    'real-dest',
    'decisions retry/confirm/abandon/typo (accepted/refused)',
    'resets',
    'skewed',
    'faults',
    'duplicates',
    'lost',
    'stuck',
    'decision violations',
    'all violations',
  ];
  const cells = [...rows, total].map((r) =>
    [
      r.seed,
      r.effects,
      r.multiStep,
      r.revised,
      r.realDestination,
      decisions(r.decisions),
      r.resets,
      r.skewed,
      r.faults,
      r.duplicates,
      r.lost,
      r.stuck,
      r.decisionViolations,
      r.otherViolations,
    ].map(String),
  );
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => (c[i] ?? '').length)));
  const line = (c: string[]) => `| ${c.map((x, i) => x.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...cells.map(line)];
}

/** The steps a seed draws, without running them (capped steps are skipped when the run meets them). */
export function drawnSteps(options: Pick<ChaosOptions, 'effects' | 'mix' | 'pageFill'>, seed: number): string[] {
  const mix = resolveMix(options.mix);
  let drawn: string[] = [];
  fc.check(
    fc.property(chaosSteps(Math.max(10, options.effects * 3), { mix, pageFill: options.pageFill ?? 0 }), (steps) => {
      drawn = steps.map(String);
      return true;
    }),
    { seed, numRuns: 1 },
  );
  return drawn;
}
