-- Revisions of a refused effect (README, "Revisions"): a person approves a new payload under the same effect ID;
-- it becomes a new release revision whose steps keep their destination, operation and target. The only way out
-- of a terminal stage is this one: rejected → released, with the revision row and its release rows, in one
-- transaction. Attempts are numbered per step within a revision; each carries the key released with its step.
CREATE TABLE "revisions" (
	"effect_id" text NOT NULL,
	"revision" integer NOT NULL,
	"payload" jsonb NOT NULL,
	"fingerprint" text NOT NULL,
	"intent_sha256" text NOT NULL,
	"approved_by" text NOT NULL,
	"authorization_ref" text NOT NULL,
	"reason" text NOT NULL,
	"approved_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "revisions_pk" PRIMARY KEY("effect_id","revision"),
	CONSTRAINT "revision_after_approval" CHECK ("revisions"."revision" >= 2),
	CONSTRAINT "revision_fingerprint_is_sha256" CHECK ("revisions"."fingerprint" ~ '^[0-9a-f]{64}$'),
	CONSTRAINT "revision_intent_is_sha256" CHECK ("revisions"."intent_sha256" ~ '^[0-9a-f]{64}$'),
	CONSTRAINT "revision_approved_by_present" CHECK (length("revisions"."approved_by") BETWEEN 1 AND 200),
	CONSTRAINT "revision_authorization_ref_present" CHECK (length("revisions"."authorization_ref") BETWEEN 1 AND 200),
	CONSTRAINT "revision_reason_present" CHECK (length("revisions"."reason") BETWEEN 1 AND 1000)
);
--> statement-breakpoint
ALTER TABLE "attempts" DROP CONSTRAINT "key_is_effect_scoped";--> statement-breakpoint
ALTER TABLE "attempts" DROP CONSTRAINT "attempts_released_step_fk";
--> statement-breakpoint
DROP INDEX "attempts_effect_step_number_uq";--> statement-breakpoint
ALTER TABLE "effects" ADD COLUMN "revision" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE "releases" ADD COLUMN "idempotency_key" text;--> statement-breakpoint
-- Every release so far is revision 1: its key is its step's own (the effect ID, or effect ID~step). Releases are
-- append-only, so the guard steps aside for this one backfill, inside the migration's transaction.
ALTER TABLE "releases" DISABLE TRIGGER "releases_append_only";--> statement-breakpoint
UPDATE "releases" SET "idempotency_key" = CASE WHEN "step" = 'main' THEN "effect_id" ELSE "effect_id" || '~' || "step" END;--> statement-breakpoint
ALTER TABLE "releases" ENABLE TRIGGER "releases_append_only";--> statement-breakpoint
ALTER TABLE "releases" ALTER COLUMN "idempotency_key" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "revisions" ADD CONSTRAINT "revisions_effect_id_effects_effect_id_fk" FOREIGN KEY ("effect_id") REFERENCES "public"."effects"("effect_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
-- The index the attempts' foreign key names comes first.
CREATE UNIQUE INDEX "releases_effect_revision_step_key_uq" ON "releases" USING btree ("effect_id","revision","step","idempotency_key");--> statement-breakpoint
ALTER TABLE "attempts" ADD CONSTRAINT "attempts_released_step_key_fk" FOREIGN KEY ("effect_id","release_revision","step","idempotency_key") REFERENCES "public"."releases"("effect_id","revision","step","idempotency_key") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "attempts_effect_step_revision_number_uq" ON "attempts" USING btree ("effect_id","step","release_revision","attempt_number");--> statement-breakpoint
ALTER TABLE "attempts" ADD CONSTRAINT "key_is_effect_scoped" CHECK ("attempts"."idempotency_key" = (CASE WHEN "attempts"."step" = 'main' THEN "attempts"."effect_id" ELSE "attempts"."effect_id" || '~' || "attempts"."step" END) OR (left("attempts"."idempotency_key", length((CASE WHEN "attempts"."step" = 'main' THEN "attempts"."effect_id" ELSE "attempts"."effect_id" || '~' || "attempts"."step" END)) + 2) = (CASE WHEN "attempts"."step" = 'main' THEN "attempts"."effect_id" ELSE "attempts"."effect_id" || '~' || "attempts"."step" END) || '#r'
    AND CASE WHEN substr("attempts"."idempotency_key", length((CASE WHEN "attempts"."step" = 'main' THEN "attempts"."effect_id" ELSE "attempts"."effect_id" || '~' || "attempts"."step" END)) + 3) ~ '^[1-9][0-9]{0,8}$' THEN substr("attempts"."idempotency_key", length((CASE WHEN "attempts"."step" = 'main' THEN "attempts"."effect_id" ELSE "attempts"."effect_id" || '~' || "attempts"."step" END)) + 3)::integer BETWEEN 2 AND "attempts"."release_revision" ELSE false END));--> statement-breakpoint
ALTER TABLE "effects" ADD CONSTRAINT "effect_revision_positive" CHECK ("effects"."revision" >= 1);--> statement-breakpoint
ALTER TABLE "releases" ADD CONSTRAINT "release_key_is_effect_scoped" CHECK ("releases"."idempotency_key" = (CASE WHEN "releases"."step" = 'main' THEN "releases"."effect_id" ELSE "releases"."effect_id" || '~' || "releases"."step" END) OR (left("releases"."idempotency_key", length((CASE WHEN "releases"."step" = 'main' THEN "releases"."effect_id" ELSE "releases"."effect_id" || '~' || "releases"."step" END)) + 2) = (CASE WHEN "releases"."step" = 'main' THEN "releases"."effect_id" ELSE "releases"."effect_id" || '~' || "releases"."step" END) || '#r'
    AND CASE WHEN substr("releases"."idempotency_key", length((CASE WHEN "releases"."step" = 'main' THEN "releases"."effect_id" ELSE "releases"."effect_id" || '~' || "releases"."step" END)) + 3) ~ '^[1-9][0-9]{0,8}$' THEN substr("releases"."idempotency_key", length((CASE WHEN "releases"."step" = 'main' THEN "releases"."effect_id" ELSE "releases"."effect_id" || '~' || "releases"."step" END)) + 3)::integer BETWEEN 2 AND "releases"."revision" ELSE false END));--> statement-breakpoint
CREATE TRIGGER revisions_append_only BEFORE UPDATE OR DELETE ON revisions
  FOR EACH ROW EXECUTE FUNCTION ledger_forbid_change();
--> statement-breakpoint
-- A revision is taken only of a rejected effect, as the next number. Locking the effect row makes two people
-- revising at once take turns: the second finds the effect released and is refused.
CREATE FUNCTION ledger_guard_revision() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  effect_stage text;
  effect_revision integer;
BEGIN
  SELECT stage, revision INTO effect_stage, effect_revision FROM effects WHERE effect_id = NEW.effect_id FOR UPDATE;
  IF effect_stage IS DISTINCT FROM 'rejected' THEN
    RAISE EXCEPTION 'effect % is %: only a rejected effect takes a new revision', NEW.effect_id, effect_stage
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF NEW.revision <> effect_revision + 1 THEN
    RAISE EXCEPTION 'effect % is at revision %: the next is %, not %', NEW.effect_id, effect_revision,
      effect_revision + 1, NEW.revision
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER revisions_guard BEFORE INSERT ON revisions
  FOR EACH ROW EXECUTE FUNCTION ledger_guard_revision();
--> statement-breakpoint
-- At commit: the revision took effect in its own transaction (the effect moved to it), with the same steps as
-- the revision before. A revision row alone, or one with steps added or dropped, never commits.
CREATE FUNCTION ledger_guard_revision_complete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM effects WHERE effect_id = NEW.effect_id AND revision >= NEW.revision) THEN
    RAISE EXCEPTION 'revision % of effect % was written without moving the effect to it', NEW.revision, NEW.effect_id
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF EXISTS (
    (SELECT step FROM releases WHERE effect_id = NEW.effect_id AND revision = NEW.revision
     EXCEPT SELECT step FROM releases WHERE effect_id = NEW.effect_id AND revision = NEW.revision - 1)
    UNION ALL
    (SELECT step FROM releases WHERE effect_id = NEW.effect_id AND revision = NEW.revision - 1
     EXCEPT SELECT step FROM releases WHERE effect_id = NEW.effect_id AND revision = NEW.revision)) THEN
    RAISE EXCEPTION 'revision % of effect % releases other steps than revision %', NEW.revision, NEW.effect_id,
      NEW.revision - 1
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE CONSTRAINT TRIGGER revisions_complete AFTER INSERT ON revisions DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION ledger_guard_revision_complete();
--> statement-breakpoint
-- 0005's release guard, with revisions: a release above revision 1 belongs to a person's revision row, is
-- written before the effect moves to it, and keeps each step's destination, operation and target (the
-- approval's intent: where it goes, what it does, to what). A release written without a key gets its step's
-- own (the revision-1 key), as every release before this migration had.
CREATE OR REPLACE FUNCTION ledger_guard_release() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  effect_revision integer;
BEGIN
  NEW.idempotency_key := coalesce(NEW.idempotency_key,
    CASE WHEN NEW.step = 'main' THEN NEW.effect_id ELSE NEW.effect_id || '~' || NEW.step END);
  IF NEW.step = 'main' AND NOT EXISTS (SELECT 1 FROM effects WHERE effect_id = NEW.effect_id
      AND destination = NEW.destination) THEN
    RAISE EXCEPTION 'release %#% main step goes to %, not where its effect was approved to go',
      NEW.effect_id, NEW.revision, NEW.destination
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF EXISTS (SELECT 1 FROM releases WHERE effect_id = NEW.effect_id AND step = NEW.step
             AND (destination, operation) IS DISTINCT FROM (NEW.destination, NEW.operation)) THEN
    RAISE EXCEPTION 'release %#% step % changes its destination or operation', NEW.effect_id, NEW.revision, NEW.step
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF NEW.revision > 1 THEN
    SELECT revision INTO effect_revision FROM effects WHERE effect_id = NEW.effect_id;
    IF NOT EXISTS (SELECT 1 FROM revisions WHERE effect_id = NEW.effect_id AND revision = NEW.revision) THEN
      RAISE EXCEPTION 'release %#% has no revision approved by a person', NEW.effect_id, NEW.revision
        USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF effect_revision IS DISTINCT FROM NEW.revision - 1 THEN
      RAISE EXCEPTION 'release %#%: the effect is at revision %; a revision is released before the effect moves to it',
        NEW.effect_id, NEW.revision, effect_revision
        USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF EXISTS (SELECT 1 FROM releases WHERE effect_id = NEW.effect_id AND step = NEW.step AND revision = 1
               AND target IS DISTINCT FROM NEW.target) THEN
      RAISE EXCEPTION 'release %#% step % changes its target: that is another effect, not a revision',
        NEW.effect_id, NEW.revision, NEW.step
        USING ERRCODE = 'integrity_constraint_violation';
    END IF;
  END IF;
  RETURN NEW;
END;
$$;
--> statement-breakpoint
-- 0001's effect guard, with the one way out of a terminal stage: rejected → released, moving the effect to its
-- next revision, once that revision's row and release rows exist (written first, in the same transaction).
CREATE OR REPLACE FUNCTION ledger_guard_effect() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'effects are never deleted (effect %)', OLD.effect_id
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF (NEW.effect_id, NEW.destination, NEW.operation, NEW.fingerprint, NEW.payload, NEW.approved_by,
      NEW.authorization_ref, NEW.summary, NEW.mechanism, NEW.key_retention_seconds, NEW.approved_at)
     IS DISTINCT FROM
     (OLD.effect_id, OLD.destination, OLD.operation, OLD.fingerprint, OLD.payload, OLD.approved_by,
      OLD.authorization_ref, OLD.summary, OLD.mechanism, OLD.key_retention_seconds, OLD.approved_at) THEN
    RAISE EXCEPTION 'effect % is immutable except for its stage', OLD.effect_id
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF NEW.revision IS DISTINCT FROM OLD.revision OR (OLD.stage = 'rejected' AND NEW.stage = 'released') THEN
    IF NOT (OLD.stage = 'rejected' AND NEW.stage = 'released' AND NEW.revision = OLD.revision + 1
            AND EXISTS (SELECT 1 FROM revisions WHERE effect_id = NEW.effect_id AND revision = NEW.revision)
            AND EXISTS (SELECT 1 FROM releases WHERE effect_id = NEW.effect_id AND revision = NEW.revision)) THEN
      RAISE EXCEPTION 'effect % is % at revision % (a terminal stage is final): only a rejected effect moves, to released, with its next revision approved by a person and released (asked: % at revision %)',
        OLD.effect_id, OLD.stage, OLD.revision, NEW.stage, NEW.revision
        USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
  END IF;
  IF OLD.stage IN ('recorded', 'rejected', 'abandoned') AND NEW.stage <> OLD.stage THEN
    RAISE EXCEPTION 'effect % is % (terminal); cannot move to %', OLD.effect_id, OLD.stage, NEW.stage
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END;
$$;
--> statement-breakpoint
-- 0005's attempt guard, per revision: an attempt sends the effect's current revision (a run, or a zombie
-- activity, still on an earlier one is refused), and attempt numbers grow per step within a revision.
CREATE OR REPLACE FUNCTION ledger_guard_attempt() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  effect_stage text;
  effect_revision integer;
  latest integer;
BEGIN
  -- A retried recordAttempt re-inserts its own row (ON CONFLICT DO NOTHING): not a new attempt.
  IF EXISTS (SELECT 1 FROM attempts WHERE effect_id = NEW.effect_id AND step = NEW.step
             AND release_revision = NEW.release_revision AND attempt_number = NEW.attempt_number) THEN
    RETURN NEW;
  END IF;
  SELECT stage, revision INTO effect_stage, effect_revision FROM effects WHERE effect_id = NEW.effect_id FOR UPDATE;
  IF effect_stage IN ('recorded', 'rejected', 'abandoned') THEN
    RAISE EXCEPTION 'effect % is % (terminal): no new attempt', NEW.effect_id, effect_stage
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF NEW.release_revision IS DISTINCT FROM effect_revision THEN
    RAISE EXCEPTION 'effect % is at revision %: no attempt sends revision %', NEW.effect_id, effect_revision,
      NEW.release_revision
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF EXISTS (SELECT 1 FROM facts WHERE effect_id = NEW.effect_id AND step = NEW.step) THEN
    RAISE EXCEPTION 'effect % step % already has its fact: no new attempt', NEW.effect_id, NEW.step
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  SELECT max(attempt_number) INTO latest FROM attempts
    WHERE effect_id = NEW.effect_id AND step = NEW.step AND release_revision = NEW.release_revision;
  IF latest > NEW.attempt_number THEN
    RAISE EXCEPTION 'effect % step %: attempt % comes from a run that has not seen attempt %: only the run that knows every attempt adds one',
      NEW.effect_id, NEW.step, NEW.attempt_number, latest
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END;
$$;
