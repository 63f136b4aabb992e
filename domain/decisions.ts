// Human decisions on an effect frozen in UNKNOWN, as an operator types them in the Web UI: one JSON
// object per signal. Pure validation (no zod: nothing here may drag more than plain code into the
// workflow bundle); a payload that fails is recorded as a rejected decision and changes nothing.
// Text the ledger cannot store (NUL, lone surrogates) is refused here: accepted, it would make the
// recordDecision activity fail the same way on every retry.
import { STEP_SOURCE } from './idempotency-key.js';
import { cutText, shownText, storableText, textProblem } from './storable.js';

export const DECISION_KINDS = ['approve-retry', 'confirm-delivery', 'abandon'] as const;
export type DecisionKind = (typeof DECISION_KINDS)[number];

/** What the ledger records: the decisions, plus a signal whose name we did not recognise (a typo in the UI). */
export const RECORDED_DECISION_KINDS = [...DECISION_KINDS, 'unrecognised'] as const;
export type RecordedDecisionKind = (typeof RECORDED_DECISION_KINDS)[number];

/**
 * What a decision answers, when the person says so (the status query and the UI's details show the current
 * values): the step waited on, the revision being sent, the attempt. A decision that arrives after the effect
 * moved on is refused as stale. Without them, a decision answers what the effect awaited when it arrived.
 */
export interface DecisionBinding {
  step?: string;
  revision?: number;
  attempt?: number;
}

export type Decision = { actor: string; reason: string } & DecisionBinding &
  (
    | { kind: 'approve-retry' }
    | { kind: 'confirm-delivery'; externalId?: string; externalUrl?: string }
    | { kind: 'abandon'; checkedAbsent?: true }
  );

export type ParsedDecision = { ok: true; decision: Decision } | { ok: false; error: string; actor: string };

const BINDING_FIELDS = ['step', 'revision', 'attempt'] as const;

const FIELDS: Record<DecisionKind, readonly string[]> = {
  'approve-retry': ['actor', 'reason', ...BINDING_FIELDS],
  'confirm-delivery': ['actor', 'reason', 'externalId', 'externalUrl', ...BINDING_FIELDS],
  abandon: ['actor', 'reason', 'checkedAbsent', ...BINDING_FIELDS],
};

const STEP_NAME = new RegExp(STEP_SOURCE);

/** What each signal takes, for descriptions and the README. */
export const DECISION_EXAMPLES: Record<DecisionKind, string> = {
  'approve-retry': '{"actor": "ops@example.com", "reason": "checked the provider dashboard: nothing there"}',
  'confirm-delivery':
    '{"actor": "ops@example.com", "reason": "post is live", "externalId": "post_123", "externalUrl": "https://…"}',
  abandon: '{"actor": "ops@example.com", "reason": "customer cancelled; refund handled by hand"}',
};

/** How a payload binds a decision to what it answers (descriptions, docs). */
export const DECISION_BINDING_HINT =
  'Optional: "step", "revision", "attempt" as Current Details shows them under "Decide on" bind the decision; once the effect has moved past them it is refused as stale. On a multi-step or revised effect an attempt number needs its step and revision.';

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function text(raw: Record<string, unknown>, field: string, max: number): string | undefined | Error {
  const value = raw[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'string')
    return new Error(`${field} must be a string, got ${value === null ? 'null' : typeof value}`);
  const problem = textProblem(value);
  if (problem) return new Error(`${field} ${problem}`);
  const trimmed = value.trim();
  if (!trimmed) return new Error(`${field} must not be empty`);
  if (trimmed.length > max) return new Error(`${field} is longer than ${max} characters`);
  return trimmed;
}

export function isDecisionKind(value: unknown): value is DecisionKind {
  return typeof value === 'string' && (DECISION_KINDS as readonly string[]).includes(value);
}

/** The step, revision and attempt a payload says it answers; each optional, each checked. */
function binding(raw: Record<string, unknown>): DecisionBinding | Error {
  const { step, revision, attempt } = raw;
  const bound: DecisionBinding = {};
  if (step !== undefined) {
    if (typeof step !== 'string' || !STEP_NAME.test(step))
      return new Error('step must name the step this decision answers (e.g. "main" or "announce")');
    bound.step = step;
  }
  for (const [field, value] of [
    ['revision', revision],
    ['attempt', attempt],
  ] as const) {
    if (value === undefined) continue;
    if (!(Number.isSafeInteger(value) && (value as number) >= 1))
      return new Error(`${field} must be the number of the ${field} this decision answers (1, 2, …)`);
    bound[field] = value as number;
  }
  return bound;
}

export function parseDecision(kind: unknown, raw: unknown): ParsedDecision {
  // Who sent a refused payload, as far as it says: storable and cut by code points, whatever it held.
  const actorHint =
    isPlainObject(raw) && typeof raw.actor === 'string' ? cutText(storableText(raw.actor.trim()), 200) : '';
  const fail = (error: string): ParsedDecision => ({ ok: false, error, actor: actorHint });
  if (!isDecisionKind(kind))
    return fail(`unknown decision ${JSON.stringify(kind)}; expected one of ${DECISION_KINDS.join(', ')}`);
  if (!isPlainObject(raw)) return fail(`the payload must be one JSON object, e.g. ${DECISION_EXAMPLES[kind]}`);
  const unknownFields = Object.keys(raw).filter((k) => !FIELDS[kind].includes(k));
  if (unknownFields.length)
    return fail(
      `unknown field(s) ${unknownFields.map(shownText).join(', ')}; ${kind} takes ${FIELDS[kind].join(', ')}`,
    );
  const actor = text(raw, 'actor', 200);
  const reason = text(raw, 'reason', 1000);
  for (const value of [actor, reason]) if (value instanceof Error) return fail(value.message);
  if (!actor) return fail('actor is required: who decides (e.g. an email)');
  if (!reason) return fail('reason is required: why');
  const bound = binding(raw);
  if (bound instanceof Error) return fail(bound.message);
  if (kind === 'abandon') {
    // The person's own word that the object is not at the destination: what an abandon needs where the last look
    // could not tell (a crowded listing, a lagging search). Only `true` says it.
    if (raw.checkedAbsent !== undefined && raw.checkedAbsent !== true)
      return fail('checkedAbsent must be true (you checked the destination and the object is not there), or left out');
    const checked = raw.checkedAbsent === true ? { checkedAbsent: true as const } : {};
    return { ok: true, decision: { kind, actor: actor as string, reason: reason as string, ...bound, ...checked } };
  }
  if (kind !== 'confirm-delivery')
    return { ok: true, decision: { kind, actor: actor as string, reason: reason as string, ...bound } };
  const externalId = text(raw, 'externalId', 200);
  const externalUrl = text(raw, 'externalUrl', 2000);
  for (const value of [externalId, externalUrl]) if (value instanceof Error) return fail(value.message);
  if (!externalId && !externalUrl) return fail('confirm-delivery needs evidence: externalId and/or externalUrl');
  if (typeof externalUrl === 'string' && !/^https?:\/\/\S+$/.test(externalUrl))
    return fail('externalUrl must be an http(s) URL');
  const decision: Decision = { kind, actor: actor as string, reason: reason as string, ...bound };
  if (typeof externalId === 'string') decision.externalId = externalId;
  if (typeof externalUrl === 'string') decision.externalUrl = externalUrl;
  return { ok: true, decision };
}
