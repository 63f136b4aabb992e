// The effect audit: the ledger against what each destination holds, and against Temporal. Shared by
// `effect audit` (an operator's command) and the chaos run (which also demands that every effect has settled).
//
// Objects pair with steps by the reference stamped in them: `effectID` is the main step, `effectID~step` another.
//
//   duplicate              a step with more than one object at its destination
//   object_without_fact    an object carrying our reference whose step has no fact (and is not still being worked on)
//   object_without_effect  an object carrying a reference the ledger does not know (no such effect or step)
//   fact_object_missing    a fact whose object is not at the destination
//   fact_object_differs    a fact whose object carries another effect ID or another body than the release
//   foreign_key            an object (or a request) whose idempotency key is not derived from its effect ID
//   stuck                  a non-terminal effect with no running workflow
//   lost                   (settled runs only) neither terminal nor visibly waiting for a person with a reason
//   request_before_attempt a request reached the provider before its attempt row existed (request log)
import type postgres from 'postgres';
import { idempotencyKeyFor, MAIN_STEP, parseKey } from '../../domain/idempotency-key.js';
import { type EffectStage, isTerminal } from '../../domain/stages.js';
import type { DestinationObject, DestinationRecords } from './destination-records.js';
import type { LoggedRequest, RequestLog } from './request-log.js';

export const FINDING_KINDS = [
  'duplicate',
  'object_without_fact',
  'object_without_effect',
  'fact_object_missing',
  'fact_object_differs',
  'foreign_key',
  'stuck',
  'lost',
  'request_before_attempt',
] as const;
export type FindingKind = (typeof FINDING_KINDS)[number];

export interface Finding {
  kind: FindingKind;
  effectId: string | null;
  destination: string;
  detail: string;
}

/** What Temporal says about an effect's workflow: its status, and (while it runs) what it awaits. */
export interface WorkflowView {
  status: string; // RUNNING, COMPLETED, FAILED, TERMINATED, …, or NOT_FOUND
  stage?: string;
  awaiting?: string;
}
export type WorkflowProbe = (effectId: string) => Promise<WorkflowView>;

/** Is the workflow visibly waiting for a person (its status query's `awaiting` asks for a human decision)? */
export function waitsForPerson(view: WorkflowView): boolean {
  const awaiting = view.awaiting ?? '';
  // "retry with the same key in 1 s (not sent: …); a person may abandon it meanwhile": a pause before a resend is on
  // its way; a person may act, but none is needed.
  return (
    view.status === 'RUNNING' &&
    /human|person|decision/i.test(awaiting) &&
    !/person may abandon it meanwhile/i.test(awaiting)
  );
}

/** The rows of the ledger the audit needs, read by one plain query each. */
export interface LedgerRows {
  effects: Array<{ effectId: string; destination: string; stage: string; approvedAt: Date; stageChangedAt: Date }>;
  releases: Array<{
    effectId: string;
    revision: number;
    step: string;
    destination: string;
    bodySha256: string;
    /** The key (and stamped reference) released with the step: `#r<n>` in a revision-scoped revision. */
    idempotencyKey?: string;
  }>;
  facts: Array<{ effectId: string; step: string; destination: string; externalId: string }>;
  attempts: Array<{ effectId: string; step: string; idempotencyKey: string; startedAt: Date }>;
}

/** A postgres.js connection (ledger/db.ts's `sql`). */
export type Sql = postgres.Sql;

export async function readLedgerRows(sql: Sql): Promise<LedgerRows> {
  const [effects, releases, facts, attempts] = await Promise.all([
    sql<LedgerRows['effects']>`SELECT effect_id AS "effectId", destination, stage,
      approved_at AS "approvedAt", stage_changed_at AS "stageChangedAt" FROM effects`,
    sql<LedgerRows['releases']>`SELECT effect_id AS "effectId", revision, step, destination,
      body_sha256 AS "bodySha256", idempotency_key AS "idempotencyKey" FROM releases`,
    sql<LedgerRows['facts']>`SELECT effect_id AS "effectId", step, destination, external_id AS "externalId" FROM facts`,
    sql<LedgerRows['attempts']>`SELECT effect_id AS "effectId", step, idempotency_key AS "idempotencyKey",
      started_at AS "startedAt" FROM attempts`,
  ]);
  // drizzle's postgres.js driver leaves timestamps as text: make them dates here.
  const date = (value: Date | string) => (value instanceof Date ? value : new Date(value));
  return {
    effects: effects.map((e) => ({ ...e, approvedAt: date(e.approvedAt), stageChangedAt: date(e.stageChangedAt) })),
    releases: [...releases],
    facts: [...facts],
    attempts: attempts.map((a) => ({ ...a, startedAt: date(a.startedAt) })),
  };
}

export interface AuditOptions {
  destinations: DestinationRecords[];
  /** Temporal's view; without it, stuck and lost are not checked. */
  workflows?: WorkflowProbe;
  /** The provider's request log, when there is one. */
  requestLog?: RequestLog;
  /** Only this destination. */
  destination?: string;
  /** Only effects approved at or after this time. */
  since?: Date;
  /** Only effects whose ID this accepts (the chaos run audits its own effects). */
  effectFilter?: (effectId: string) => boolean;
  /** An effect whose stage moved within this many ms is not called stuck yet (a start may be in flight). */
  graceMs?: number;
  /** Every effect should have settled: terminal, or running and waiting for a person with a reason. */
  requireSettled?: boolean;
}

export interface AuditReport {
  findings: Finding[];
  counts: Record<FindingKind, number>;
  checked: {
    effects: number;
    facts: number;
    objects: number;
    workflows: number | null;
    requests: number | null;
  };
  /** Why a check was skipped (the request log absent, no Temporal client). */
  skipped: string[];
  /** Effects still being worked on (non-terminal, workflow running), with what they await. */
  inProgress: Array<{ effectId: string; stage: string; awaiting: string | null }>;
}

/** The effect a key names, if the key is derived from an effect ID (the ID itself, or ID~step). */
export function effectOfKey(key: string): string | null {
  return parseKey(key)?.effectId ?? null;
}

/** One step of one effect, as a map key: its reference (`effectID` or `effectID~step`). */
const stepRef = (effectId: string, step: string) => idempotencyKeyFor(effectId, step);

const EFFECTFUL_PATHS = ['/v1/objects', '/social/v1/posts'];

export async function audit(sql: Sql, options: AuditOptions): Promise<AuditReport> {
  return auditRows(await readLedgerRows(sql), options);
}

/** The audit over ledger rows already read (what the unit test feeds it). */
export async function auditRows(rows: LedgerRows, options: AuditOptions): Promise<AuditReport> {
  const since = options.since;
  const inScope = (effectId: string, destination: string) =>
    (!options.destination || destination === options.destination) &&
    (!options.effectFilter || options.effectFilter(effectId));
  const effects = new Map(
    rows.effects
      .filter((e) => inScope(e.effectId, e.destination) && (!since || e.approvedAt >= since))
      .map((e) => [e.effectId, e]),
  );
  const allEffects = new Map(rows.effects.map((e) => [e.effectId, e]));
  const destinationOf = (effectId: string) => allEffects.get(effectId)?.destination ?? '?';
  // Each step's latest release: where its object must be, and the body it must carry.
  const release = new Map<string, LedgerRows['releases'][number]>();
  for (const r of rows.releases) {
    const seen = release.get(stepRef(r.effectId, r.step));
    if (!seen || seen.revision < r.revision) release.set(stepRef(r.effectId, r.step), r);
  }
  const destinationOfStep = (effectId: string, step: string) =>
    release.get(stepRef(effectId, step))?.destination ??
    (step === MAIN_STEP ? allEffects.get(effectId)?.destination : undefined);
  const facts = new Map(rows.facts.filter((f) => effects.has(f.effectId)).map((f) => [stepRef(f.effectId, f.step), f]));
  const findings: Finding[] = [];
  const skipped: string[] = [];
  const add = (kind: FindingKind, effectId: string | null, destination: string, detail: string) =>
    findings.push({ kind, effectId, destination, detail });

  // Temporal's view of every non-terminal effect: stuck (no running workflow), lost (not settled).
  const views = new Map<string, WorkflowView>();
  const inProgress: AuditReport['inProgress'] = [];
  let workflowsChecked: number | null = null;
  if (options.workflows) {
    workflowsChecked = 0;
    for (const effect of effects.values()) {
      if (isTerminal(effect.stage as EffectStage)) continue;
      const view = await options.workflows(effect.effectId);
      workflowsChecked++;
      views.set(effect.effectId, view);
      const recent = Date.now() - effect.stageChangedAt.getTime() < (options.graceMs ?? 0);
      if (view.status !== 'RUNNING') {
        if (!recent)
          add(
            'stuck',
            effect.effectId,
            effect.destination,
            `stage ${effect.stage} since ${effect.stageChangedAt.toISOString()}, workflow ${view.status}`,
          );
        continue;
      }
      inProgress.push({
        effectId: effect.effectId,
        stage: view.stage ?? effect.stage,
        awaiting: view.awaiting ?? null,
      });
      // A settled effect may be caught mid-readback: look again a few times before calling it lost.
      let settled = waitsForPerson(view);
      for (let look = 0; options.requireSettled && !settled && look < 3; look++) {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        settled = waitsForPerson(await options.workflows(effect.effectId));
      }
      if (options.requireSettled && !settled)
        add(
          'lost',
          effect.effectId,
          effect.destination,
          `stage ${view.stage ?? effect.stage}, workflow running, not waiting for a person (awaiting: ${view.awaiting ?? 'nothing'})`,
        );
    }
  } else {
    skipped.push('stuck/lost: no Temporal client');
  }

  // Each destination's own records against the facts.
  let objectsChecked = 0;
  for (const records of options.destinations) {
    if (options.destination && records.destination !== options.destination) continue;
    const everyObject = await records.objects(since);
    const objects = everyObject.filter((o) => o.effectId !== null);
    /** Out of every readback's sight: the provider shows only its newest `shownAtMost`, and that many are newer. */
    const beyondSight = (object: DestinationObject) =>
      records.shownAtMost !== undefined &&
      everyObject.filter((o) => Date.parse(o.createdAt) > Date.parse(object.createdAt)).length >= records.shownAtMost;
    const byStep = new Map<string, DestinationObject[]>();
    for (const object of objects) {
      const reference = object.effectId as string;
      const named = parseKey(reference);
      const effectId = named?.effectId ?? reference;
      const effect = allEffects.get(effectId);
      if (options.effectFilter && !options.effectFilter(effectId)) continue;
      if (effect && !effects.has(effectId)) continue; // another destination filter / before --since
      objectsChecked++;
      if (!effect || !named) {
        add('object_without_effect', effectId, records.destination, `object ${object.id} carries an unknown effect ID`);
        continue;
      }
      const destination = destinationOfStep(effectId, named.step);
      if (destination === undefined) {
        add(
          'object_without_effect',
          effectId,
          records.destination,
          `object ${object.id}: the effect has no step ${named.step}`,
        );
        continue;
      }
      if (destination !== records.destination) {
        add(
          'object_without_effect',
          effectId,
          records.destination,
          `object ${object.id}: step ${named.step} of the effect targets ${destination}`,
        );
        continue;
      }
      // Every revision's object of a step is that step's: two of them is a duplicate.
      const step = stepRef(effectId, named.step);
      byStep.set(step, [...(byStep.get(step) ?? []), object]);
      if (records.keyed) {
        const key = object.idempotencyKey ?? null;
        // The key names the same step the stamped reference does.
        if (key === null || key !== reference)
          add(
            'foreign_key',
            effectId,
            records.destination,
            `object ${object.id} was created under key ${JSON.stringify(key)}`,
          );
      }
    }
    for (const [reference, found] of byStep) {
      const { effectId, step } = parseKey(reference) as { effectId: string; step: string };
      const which = step === MAIN_STEP ? '' : ` (step ${step})`;
      if (found.length > 1)
        add(
          'duplicate',
          effectId,
          records.destination,
          `${found.length} objects${which}: ${found.map((o) => o.id).join(', ')}`,
        );
      const fact = facts.get(reference);
      if (!fact) {
        const effect = effects.get(effectId);
        if (!effect) continue;
        const view = views.get(effectId);
        // Still being worked on: its workflow runs and will record (or a person will decide).
        if (!isTerminal(effect.stage as EffectStage) && view?.status === 'RUNNING' && !options.requireSettled) continue;
        // Settled as designed: no look can see the object any more (the capped listing moved past it), and the
        // effect asks the person who can, at the provider's dashboard. A look that could see it and did not is
        // still reported (and one that said absent beside it is absent_beside_object, in the chaos run).
        if (view?.status === 'RUNNING' && waitsForPerson(view) && found.length === 1 && found.every(beyondSight)) {
          const entry = inProgress.find((e) => e.effectId === effectId);
          if (entry)
            entry.awaiting = `${entry.awaiting ?? ''} [object ${found[0]?.id} is beyond the provider's listing of its newest ${records.shownAtMost}: a person's to confirm]`;
          continue;
        }
        add(
          'object_without_fact',
          effectId,
          records.destination,
          `object ${found.map((o) => o.id).join(', ')}${which}; effect ${effect.stage}${view?.awaiting ? `, awaiting: ${view.awaiting}` : ''}`,
        );
      }
    }
    for (const fact of facts.values()) {
      if (fact.destination !== records.destination) continue;
      const object = objects.find((o) => o.id === fact.externalId);
      if (!object) {
        add(
          'fact_object_missing',
          fact.effectId,
          fact.destination,
          `fact names ${fact.externalId}, not at the destination`,
        );
        continue;
      }
      const latest = release.get(stepRef(fact.effectId, fact.step));
      const reference = latest?.idempotencyKey ?? stepRef(fact.effectId, fact.step);
      const expected = latest?.bodySha256;
      if (object.effectId !== reference || object.bodySha256 !== expected)
        add(
          'fact_object_differs',
          fact.effectId,
          fact.destination,
          `fact names ${object.id}, which carries ${object.effectId} and body ${object.bodySha256?.slice(0, 12)}…; the release's body is ${expected?.slice(0, 12)}…`,
        );
    }
  }

  // The request log: every effectful request preceded by its attempt row, every key derived from an effect ID.
  let requestsChecked: number | null = null;
  if (options.requestLog?.available) {
    requestsChecked = 0;
    // Requests pair with steps: by key where one was sent, else by the released body they carried.
    const bodyOwner = new Map<string, string>();
    for (const r of rows.releases) bodyOwner.set(r.bodySha256, stepRef(r.effectId, r.step));
    const effectOfStep = (reference: string) => parseKey(reference)?.effectId ?? reference;
    const perStep = new Map<string, LoggedRequest[]>();
    for (const request of options.requestLog.requests) {
      if (request.method !== 'POST' || !EFFECTFUL_PATHS.includes(request.path.split('?')[0] ?? '')) continue;
      let reference: string | null = null;
      if (request.idempotencyKey) {
        const named = parseKey(request.idempotencyKey);
        if (named && allEffects.has(named.effectId) && destinationOfStep(named.effectId, named.step) !== undefined) {
          reference = stepRef(named.effectId, named.step);
        } else {
          const owner = request.bodySha256 ? bodyOwner.get(request.bodySha256) : undefined;
          if (owner && effects.has(effectOfStep(owner)))
            add(
              'foreign_key',
              effectOfStep(owner),
              destinationOf(effectOfStep(owner)),
              `request at ${request.at.toISOString()} carried key ${JSON.stringify(request.idempotencyKey)}`,
            );
          reference = owner ?? null;
        }
      } else if (request.bodySha256) {
        reference = bodyOwner.get(request.bodySha256) ?? null;
      }
      if (!reference || !effects.has(effectOfStep(reference))) continue;
      requestsChecked++;
      perStep.set(reference, [...(perStep.get(reference) ?? []), request]);
    }
    const attemptsOf = new Map<string, Date[]>();
    for (const a of rows.attempts) {
      const reference = stepRef(a.effectId, a.step);
      attemptsOf.set(reference, [...(attemptsOf.get(reference) ?? []), a.startedAt]);
    }
    for (const [reference, requests] of perStep) {
      const effectId = effectOfStep(reference);
      const step = parseKey(reference)?.step ?? MAIN_STEP;
      const started = (attemptsOf.get(reference) ?? []).map((d) => d.getTime());
      requests.sort((a, b) => a.at.getTime() - b.at.getTime());
      requests.forEach((request, index) => {
        const before = started.filter((t) => t <= request.at.getTime()).length;
        if (before < index + 1)
          add(
            'request_before_attempt',
            effectId,
            destinationOfStep(effectId, step) ?? destinationOf(effectId),
            `request #${index + 1}${step === MAIN_STEP ? '' : ` of step ${step}`} arrived ${request.at.toISOString()} with only ${before} attempt row(s) started before it`,
          );
      });
    }
  } else if (options.requestLog && !options.requestLog.available) {
    skipped.push(`request ordering: ${options.requestLog.why}`);
  } else {
    skipped.push('request ordering: no request log read');
  }

  const counts = Object.fromEntries(FINDING_KINDS.map((k) => [k, 0])) as Record<FindingKind, number>;
  for (const f of findings) counts[f.kind]++;
  return {
    findings,
    counts,
    checked: {
      effects: effects.size,
      facts: facts.size,
      objects: objectsChecked,
      workflows: workflowsChecked,
      requests: requestsChecked,
    },
    skipped,
    inProgress,
  };
}

export function formatAudit(report: AuditReport): string {
  const lines = [
    `checked ${report.checked.effects} effects, ${report.checked.facts} facts, ${report.checked.objects} objects at destinations, ` +
      `${report.checked.workflows ?? '-'} workflows, ${report.checked.requests ?? '-'} provider requests`,
    ...report.skipped.map((s) => `skipped ${s}`),
    ...report.findings.map((f) => `${f.kind}\t${f.effectId ?? '-'}\t${f.destination}\t${f.detail}`),
    report.findings.length
      ? `${report.findings.length} finding(s): ${Object.entries(report.counts)
          .filter(([, n]) => n > 0)
          .map(([k, n]) => `${k} ${n}`)
          .join(', ')}`
      : 'no findings',
  ];
  return lines.join('\n');
}
