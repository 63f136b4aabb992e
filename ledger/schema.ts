// The ledger: the domain's six records (README, "The ledger"), one table each. Reading this file should explain the protocol.
// Invariants live here, not in "check then insert" code: primary keys, UNIQUEs, CHECKs, foreign keys,
// and (in the custom migration 0001) triggers that make releases, attempts, evidence, facts and
// decisions append-only and freeze an effect's identity.
import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  boolean,
  check,
  foreignKey,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { RECORDED_DECISION_KINDS } from '../domain/decisions.js';
import { DEDUPE_MECHANISMS } from '../domain/destination-contract.js';
import { EFFECT_ID_SOURCE } from '../domain/effect-id.js';
import { MAIN_STEP, REVISION_SEPARATOR, STEP_SEPARATOR, STEP_SOURCE } from '../domain/idempotency-key.js';
import { CONFIRMATION_METHODS, COVERAGES, EVIDENCE_KINDS, EVIDENCE_OUTCOMES } from '../domain/outcomes.js';
import { EFFECT_STAGES, TERMINAL_STAGES } from '../domain/stages.js';
import { literal, oneOf, pattern } from './sql-words.js';

type Column = Parameters<typeof sql>[1];

/**
 * A step's key (domain/idempotency-key.ts): the effect ID for `main`, effect ID + '~' + step for another;
 * in a revision, that key or (a revision-scoped destination) that key + '#r' + a revision from 2 up to this
 * row's. Never anything a run, an activity or an attempt contributes.
 */
function keyFits(effectId: Column, step: Column, key: Column, revision: Column) {
  const main = sql.raw(literal(MAIN_STEP));
  const base = sql`(CASE WHEN ${step} = ${main} THEN ${effectId} ELSE ${effectId} || ${sql.raw(literal(STEP_SEPARATOR))} || ${step} END)`;
  const suffix = sql`substr(${key}, length(${base}) + ${sql.raw(String(REVISION_SEPARATOR.length + 1))})`;
  return sql`${key} = ${base} OR (left(${key}, length(${base}) + ${sql.raw(String(REVISION_SEPARATOR.length))}) = ${base} || ${sql.raw(literal(REVISION_SEPARATOR))}
    AND CASE WHEN ${suffix} ~ '^[1-9][0-9]{0,8}$' THEN ${suffix}::integer BETWEEN 2 AND ${revision} ELSE false END)`;
}

// The CHECKs below are built from the domain's word lists and patterns, so a new stage or decision kind
// is one edit there (then `npm run db:generate` writes the migration that widens the CHECK).

/** One approved, externally observable change. Its ID is issued at approval and never reused. */
export const effects = pgTable(
  'effects',
  {
    effectId: text('effect_id').primaryKey(),
    destination: text('destination').notNull(),
    operation: text('operation').notNull(),
    // sha256 of the canonical effect-defining fields: "still the action that was approved".
    fingerprint: text('fingerprint').notNull(),
    // The approved payload as the approver sent it; the release derives the exact package from it.
    payload: jsonb('payload').notNull(),
    approvedBy: text('approved_by').notNull(),
    authorizationRef: text('authorization_ref').notNull(),
    summary: text('summary').notNull(),
    stage: text('stage').notNull().default('prepared'),
    // How the destination dedupes (idempotency_key / transactional / natural_key / none) and for how
    // long it remembers a key: decides whether a retry after UNKNOWN may ever be automatic. A null
    // retention is "no expiry" for transactional and "no key honoured" for natural_key / none.
    mechanism: text('mechanism').notNull(),
    keyRetentionSeconds: integer('key_retention_seconds'),
    // The release revision in force: 1 at approval; a person's revision of a rejected effect moves it up by
    // one, with its revision row and release rows, in one transaction (migration 0006).
    revision: integer('revision').notNull().default(1),
    approvedAt: timestamp('approved_at', { withTimezone: true }).notNull().defaultNow(),
    stageChangedAt: timestamp('stage_changed_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    check('effect_id_format', sql`${t.effectId} ~ ${pattern(EFFECT_ID_SOURCE)}`),
    check('fingerprint_is_sha256', sql`${t.fingerprint} ~ '^[0-9a-f]{64}$'`),
    check('stage_known', sql`${t.stage} IN (${oneOf(EFFECT_STAGES)})`),
    check('mechanism_known', sql`${t.mechanism} IN (${oneOf(DEDUPE_MECHANISMS)})`),
    check('approved_by_present', sql`length(${t.approvedBy}) BETWEEN 1 AND 200`),
    check('authorization_ref_present', sql`length(${t.authorizationRef}) BETWEEN 1 AND 200`),
    check('summary_length', sql`length(${t.summary}) BETWEEN 1 AND 300`),
    check('destination_length', sql`length(${t.destination}) BETWEEN 1 AND 64`),
    check('operation_length', sql`length(${t.operation}) BETWEEN 1 AND 64`),
    check('effect_revision_positive', sql`${t.revision} >= 1`),
    index('effects_stage_idx').on(t.stage, t.stageChangedAt),
    // The ledger reconciler pages through the unfinished effects by effect ID (keyset); terminal ones, the
    // bulk of the table over time, are not in this index at all (ledger/trail.ts, listUnfinishedEffects).
    index('effects_unfinished_idx')
      .on(t.effectId)
      .where(sql`${t.stage} NOT IN (${oneOf(TERMINAL_STAGES)})`),
  ],
);

/**
 * The exact package allowed to leave, one row per outbound step (a single-step effect has only `main`).
 * Immutable: an edit is a new revision needing a new release. A step names its own destination and
 * operation: a multi-step effect may reach several destinations (a task, then a notification).
 */
export const releases = pgTable(
  'releases',
  {
    effectId: text('effect_id')
      .notNull()
      .references(() => effects.effectId),
    revision: integer('revision').notNull(),
    step: text('step').notNull().default(MAIN_STEP),
    // The order steps leave in (main is 1): an effect waits on its first step without a fact.
    position: integer('position').notNull().default(1),
    destination: text('destination').notNull(),
    operation: text('operation').notNull(),
    target: text('target').notNull(),
    package: jsonb('package').notNull(),
    bodySha256: text('body_sha256').notNull(),
    releasedBy: text('released_by').notNull(),
    // The key this step's attempts carry, fixed with the package it is stamped in (README, "Revisions").
    idempotencyKey: text('idempotency_key').notNull(),
    releasedAt: timestamp('released_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('releases_effect_revision_step_uq').on(t.effectId, t.revision, t.step),
    uniqueIndex('releases_effect_revision_position_uq').on(t.effectId, t.revision, t.position),
    // What an attempt's foreign key names: its released step and the key released with it.
    uniqueIndex('releases_effect_revision_step_key_uq').on(t.effectId, t.revision, t.step, t.idempotencyKey),
    check('release_key_is_effect_scoped', keyFits(t.effectId, t.step, t.idempotencyKey, t.revision)),
    check('revision_positive', sql`${t.revision} >= 1`),
    check('release_step_format', sql`${t.step} ~ ${pattern(STEP_SOURCE)}`),
    // The main step leaves first; every other step after it.
    check(
      'main_step_first',
      sql`(${t.step} = ${sql.raw(literal(MAIN_STEP))}) = (${t.position} = 1) AND ${t.position} >= 1`,
    ),
    check('release_destination_length', sql`length(${t.destination}) BETWEEN 1 AND 64`),
    check('release_operation_length', sql`length(${t.operation}) BETWEEN 1 AND 64`),
    check('body_sha256_format', sql`${t.bodySha256} ~ '^[0-9a-f]{64}$'`),
    check('target_length', sql`length(${t.target}) BETWEEN 1 AND 300`),
  ],
);

/**
 * A person's new revision of a refused effect: the payload they approved in its place, who, under which
 * authorization and why. Revision 1 is the approval itself (the effect row). Append-only; written in one
 * transaction with the revision's release rows and the effect's move rejected → released (migration 0006).
 */
export const revisions = pgTable(
  'revisions',
  {
    effectId: text('effect_id')
      .notNull()
      .references(() => effects.effectId),
    revision: integer('revision').notNull(),
    payload: jsonb('payload').notNull(),
    // sha256 of destination, operation and this revision's canonical payload (as the effect's fingerprint).
    fingerprint: text('fingerprint').notNull(),
    // sha256 of what must not change from the approval: destination, operation, and each step's target.
    intentSha256: text('intent_sha256').notNull(),
    approvedBy: text('approved_by').notNull(),
    authorizationRef: text('authorization_ref').notNull(),
    reason: text('reason').notNull(),
    approvedAt: timestamp('approved_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'revisions_pk', columns: [t.effectId, t.revision] }),
    check('revision_after_approval', sql`${t.revision} >= 2`),
    check('revision_fingerprint_is_sha256', sql`${t.fingerprint} ~ '^[0-9a-f]{64}$'`),
    check('revision_intent_is_sha256', sql`${t.intentSha256} ~ '^[0-9a-f]{64}$'`),
    check('revision_approved_by_present', sql`length(${t.approvedBy}) BETWEEN 1 AND 200`),
    check('revision_authorization_ref_present', sql`length(${t.authorizationRef}) BETWEEN 1 AND 200`),
    check('revision_reason_present', sql`length(${t.reason}) BETWEEN 1 AND 1000`),
  ],
);

/** Written before the provider is contacted (intent before send). Append-only. */
export const attempts = pgTable(
  'attempts',
  {
    attemptId: bigserial('attempt_id', { mode: 'number' }).primaryKey(),
    effectId: text('effect_id')
      .notNull()
      .references(() => effects.effectId),
    step: text('step').notNull(),
    attemptNumber: integer('attempt_number').notNull(),
    // Derived from the effect ID (and step) only: never the run ID, activity ID or attempt number.
    idempotencyKey: text('idempotency_key').notNull(),
    releaseRevision: integer('release_revision').notNull(),
    // Which Temporal run made the attempt: for the operator, never for the key.
    workflowRunId: text('workflow_run_id').notNull(),
    startedAt: timestamp('started_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    // Attempts are numbered per step within a release revision: a revision's first attempt is its attempt 1.
    uniqueIndex('attempts_effect_step_revision_number_uq').on(t.effectId, t.step, t.releaseRevision, t.attemptNumber),
    // An attempt sends a released step's package under the key released with it.
    foreignKey({
      name: 'attempts_released_step_key_fk',
      columns: [t.effectId, t.releaseRevision, t.step, t.idempotencyKey],
      foreignColumns: [releases.effectId, releases.revision, releases.step, releases.idempotencyKey],
    }),
    check('attempt_number_positive', sql`${t.attemptNumber} >= 1`),
    check('step_format', sql`${t.step} ~ ${pattern(STEP_SOURCE)}`),
    // The main step's key is the effect ID; another step's is effect ID + '~' + step (domain/idempotency-key.ts);
    // either may carry '#r<n>' for a revision-scoped destination's revision n.
    check('key_is_effect_scoped', keyFits(t.effectId, t.step, t.idempotencyKey, t.releaseRevision)),
  ],
);

/** What the destination said (a response to an attempt) or showed (a readback). Append-only. */
export const providerEvidence = pgTable(
  'provider_evidence',
  {
    evidenceId: bigserial('evidence_id', { mode: 'number' }).primaryKey(),
    effectId: text('effect_id')
      .notNull()
      .references(() => effects.effectId),
    attemptId: bigint('attempt_id', { mode: 'number' }).references(() => attempts.attemptId),
    // Which outbound step it speaks of: a readback or a human's check concerns one step's object.
    step: text('step').notNull().default(MAIN_STEP),
    kind: text('kind').notNull(),
    outcome: text('outcome').notNull(),
    httpStatus: integer('http_status'),
    externalId: text('external_id'),
    externalUrl: text('external_url'),
    // For readback: 'complete' or 'partial' ("not in the first 10 items" is not "absent").
    coverage: text('coverage'),
    detail: jsonb('detail').notNull(),
    recordedAt: timestamp('recorded_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    check('evidence_kind_known', sql`${t.kind} IN (${oneOf(EVIDENCE_KINDS)})`),
    check('evidence_step_format', sql`${t.step} ~ ${pattern(STEP_SOURCE)}`),
    check('evidence_outcome_known', sql`${t.outcome} IN (${oneOf(EVIDENCE_OUTCOMES)})`),
    check('coverage_known', sql`${t.coverage} IS NULL OR ${t.coverage} IN (${oneOf(COVERAGES)})`),
    check('response_has_attempt', sql`${t.kind} <> 'response' OR ${t.attemptId} IS NOT NULL`),
    // "Absent" over partial coverage is no absence (the workflow retries automatically on absent): never recorded.
    check('absent_is_complete', sql`${t.outcome} <> 'absent' OR ${t.coverage} IS NOT DISTINCT FROM 'complete'`),
    // A found or confirmed object's ID is never '' (issue 26: a matched object without an ID).
    check('found_names_object', sql`${t.outcome} NOT IN ('found', 'confirmed') OR ${t.externalId} IS DISTINCT FROM ''`),
    // One answer per attempt: a replayed activity cannot record a second, different response.
    uniqueIndex('evidence_one_response_per_attempt_uq').on(t.attemptId).where(sql`${t.kind} = 'response'`),
    // By effect, newest last: an effect's latest evidence is one index probe (the list by stage, an operator's view
    // of thousands waiting), not a backward scan of every effect's evidence (migration 0013).
    index('evidence_effect_idx').on(t.effectId, t.evidenceId),
  ],
);

/**
 * The canonical result of one outbound step: at most one per (effect, step), written only after
 * confirmation. Immutable. An effect is `recorded` when every released step has its fact (migration 0005).
 */
export const facts = pgTable(
  'facts',
  {
    effectId: text('effect_id')
      .notNull()
      .references(() => effects.effectId),
    step: text('step').notNull().default(MAIN_STEP),
    destination: text('destination').notNull(),
    externalId: text('external_id').notNull(),
    externalUrl: text('external_url'),
    occurredAt: timestamp('occurred_at', { withTimezone: true }).notNull(),
    confirmedBy: text('confirmed_by').notNull(),
    evidenceId: bigint('evidence_id', { mode: 'number' })
      .notNull()
      .references(() => providerEvidence.evidenceId),
    recordedAt: timestamp('recorded_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'facts_effect_step_pk', columns: [t.effectId, t.step] }),
    // One external object is the result of at most one step of one effect: a shared key would show up here.
    uniqueIndex('facts_destination_external_id_uq').on(t.destination, t.externalId),
    check('fact_step_format', sql`${t.step} ~ ${pattern(STEP_SOURCE)}`),
    check('confirmed_by_known', sql`${t.confirmedBy} IN (${oneOf(CONFIRMATION_METHODS)})`),
    // Up to 2000: a human may confirm with only a URL, which then names the object.
    check('external_id_length', sql`length(${t.externalId}) BETWEEN 1 AND 2000`),
  ],
);

/** A human's or a policy's choice on an unresolved effect. Rejected payloads are kept too. */
export const decisions = pgTable(
  'decisions',
  {
    decisionId: bigserial('decision_id', { mode: 'number' }).primaryKey(),
    // Which signal or update this row answers (run ID + sequence, or `update:<decision ID>`): a retried write
    // finds its own row, and a decision ID sent again, to this run or a later one, is the same decision.
    requestRef: text('request_ref').notNull(),
    effectId: text('effect_id')
      .notNull()
      .references(() => effects.effectId),
    kind: text('kind').notNull(),
    actor: text('actor').notNull(),
    reason: text('reason').notNull(),
    payload: jsonb('payload').notNull(),
    accepted: boolean('accepted').notNull(),
    rejectionReason: text('rejection_reason'),
    decidedAt: timestamp('decided_at', { withTimezone: true }).notNull().defaultNow(),
    // The run that took it: its own retried write is not a repeat; another run's is (null before 0009).
    workflowRunId: text('workflow_run_id'),
  },
  (t) => [
    // Per effect: two effects may each be decided under a caller's `ticket-42`.
    uniqueIndex('decisions_effect_request_ref_uq').on(t.effectId, t.requestRef),
    check('decision_kind_known', sql`${t.kind} IN (${oneOf(RECORDED_DECISION_KINDS)})`),
    check('rejected_decision_says_why', sql`${t.accepted} OR ${t.rejectionReason} IS NOT NULL`),
    check('accepted_decision_has_actor', sql`NOT ${t.accepted} OR length(${t.actor}) BETWEEN 1 AND 200`),
    index('decisions_effect_idx').on(t.effectId),
  ],
);

/**
 * Effects the ledger reconciler could not give a running workflow, and why (docs/reconciler.md). Operational
 * state about Temporal, not one of the records: a pass that fails to start an effect upserts its row, a start
 * that succeeds deletes it, and a pass that got through every page deletes the rows no pass has refreshed
 * since it began. So a row means "the latest passes could not start this effect", for as long as they cannot.
 */
export const startFailures = pgTable(
  'start_failures',
  {
    effectId: text('effect_id')
      .primaryKey()
      .references(() => effects.effectId),
    // What the start said, e.g. the server's refusal of a search attribute past its limit.
    reason: text('reason').notNull(),
    firstFailedAt: timestamp('first_failed_at', { withTimezone: true }).notNull().defaultNow(),
    lastFailedAt: timestamp('last_failed_at', { withTimezone: true }).notNull().defaultNow(),
    // Failed starts since the first: every pass of every worker counts.
    failures: integer('failures').notNull().default(1),
  },
  (t) => [
    check('start_failure_reason_length', sql`length(${t.reason}) BETWEEN 1 AND 2000`),
    check('start_failures_positive', sql`${t.failures} >= 1`),
    check('start_failure_times_ordered', sql`${t.firstFailedAt} <= ${t.lastFailedAt}`),
  ],
);

/**
 * Each destination's next free moment for a readback request, shared by every worker (ledger/readback-pace.ts):
 * a readback takes a turn here before each request it makes, so the destination sees at most the requests a
 * second its contract declares (`readbackRatePerSecond`), however many workers read back at once — the day a
 * provider returns from an outage with thousands of effects waiting on it. Operational state, like
 * start_failures: one row per destination, moved forward by every turn taken.
 */
export const readbackPace = pgTable(
  'readback_pace',
  {
    destination: text('destination').primaryKey(),
    // The earliest moment the next request may leave; a turn taken now starts at max(this, now, the window below).
    nextAt: timestamp('next_at', { withTimezone: true }).notNull(),
    // The latest moment each of the destination's last turns (as many as a second's worth) may leave, oldest first:
    // a turn starts a second after the one that many turns before it may have left, so a late request costs its
    // lateness once a second, not on every turn.
    latestDepartures: timestamp('latest_departures', { withTimezone: true }).array().notNull().default(sql`'{}'`),
  },
  (t) => [check('readback_pace_destination_length', sql`length(${t.destination}) BETWEEN 1 AND 200`)],
);
