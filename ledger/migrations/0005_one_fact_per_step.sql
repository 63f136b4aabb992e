-- Multi-step effects: a release row, evidence and a fact per outbound step (README, "Multi-step effects").
-- Rows written before this migration are all the `main` step of a single-step effect.
ALTER TABLE "facts" ADD COLUMN "step" text DEFAULT 'main' NOT NULL;--> statement-breakpoint
ALTER TABLE "facts" DROP CONSTRAINT "facts_pkey";--> statement-breakpoint
ALTER TABLE "facts" ADD CONSTRAINT "facts_effect_step_pk" PRIMARY KEY("effect_id","step");--> statement-breakpoint
ALTER TABLE "provider_evidence" ADD COLUMN "step" text DEFAULT 'main' NOT NULL;--> statement-breakpoint
DROP INDEX "releases_effect_revision_uq";--> statement-breakpoint
ALTER TABLE "releases" ADD COLUMN "step" text DEFAULT 'main' NOT NULL;--> statement-breakpoint
ALTER TABLE "releases" ADD COLUMN "position" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE "releases" ADD COLUMN "destination" text;--> statement-breakpoint
ALTER TABLE "releases" ADD COLUMN "operation" text;--> statement-breakpoint
-- Existing releases are their effect's main step: they take its destination and operation. Releases are
-- append-only, so the guard steps aside for this one backfill, inside the migration's transaction.
ALTER TABLE "releases" DISABLE TRIGGER "releases_append_only";--> statement-breakpoint
UPDATE "releases" r SET "destination" = e."destination", "operation" = e."operation"
  FROM "effects" e WHERE e."effect_id" = r."effect_id";--> statement-breakpoint
ALTER TABLE "releases" ENABLE TRIGGER "releases_append_only";--> statement-breakpoint
ALTER TABLE "releases" ALTER COLUMN "destination" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "releases" ALTER COLUMN "operation" SET NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "releases_effect_revision_step_uq" ON "releases" USING btree ("effect_id","revision","step");--> statement-breakpoint
CREATE UNIQUE INDEX "releases_effect_revision_position_uq" ON "releases" USING btree ("effect_id","revision","position");--> statement-breakpoint
ALTER TABLE "attempts" ADD CONSTRAINT "attempts_released_step_fk" FOREIGN KEY ("effect_id","release_revision","step") REFERENCES "public"."releases"("effect_id","revision","step") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "facts" ADD CONSTRAINT "fact_step_format" CHECK ("facts"."step" ~ '^[a-z][a-z0-9_-]{0,31}$');--> statement-breakpoint
ALTER TABLE "provider_evidence" ADD CONSTRAINT "evidence_step_format" CHECK ("provider_evidence"."step" ~ '^[a-z][a-z0-9_-]{0,31}$');--> statement-breakpoint
ALTER TABLE "releases" ADD CONSTRAINT "release_step_format" CHECK ("releases"."step" ~ '^[a-z][a-z0-9_-]{0,31}$');--> statement-breakpoint
ALTER TABLE "releases" ADD CONSTRAINT "main_step_first" CHECK (("releases"."step" = 'main') = ("releases"."position" = 1) AND "releases"."position" >= 1);--> statement-breakpoint
ALTER TABLE "releases" ADD CONSTRAINT "release_destination_length" CHECK (length("releases"."destination") BETWEEN 1 AND 64);--> statement-breakpoint
ALTER TABLE "releases" ADD CONSTRAINT "release_operation_length" CHECK (length("releases"."operation") BETWEEN 1 AND 64);--> statement-breakpoint
-- A release's main step goes to the destination its effect was approved for; any step keeps its
-- destination and operation in every revision (a revision may change what a step sends, never where).
CREATE FUNCTION ledger_guard_release() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
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
  RETURN NEW;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER releases_guard BEFORE INSERT ON releases
  FOR EACH ROW EXECUTE FUNCTION ledger_guard_release();
--> statement-breakpoint
-- 0004's attempt guard, with the fact per step: a step that has its fact takes no new attempt; the
-- effect's other steps still may.
CREATE OR REPLACE FUNCTION ledger_guard_attempt() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  effect_stage text;
  latest integer;
BEGIN
  -- A retried recordAttempt re-inserts its own row (ON CONFLICT DO NOTHING): not a new attempt.
  IF EXISTS (SELECT 1 FROM attempts WHERE effect_id = NEW.effect_id AND step = NEW.step
             AND attempt_number = NEW.attempt_number) THEN
    RETURN NEW;
  END IF;
  SELECT stage INTO effect_stage FROM effects WHERE effect_id = NEW.effect_id FOR UPDATE;
  IF effect_stage IN ('recorded', 'rejected', 'abandoned') THEN
    RAISE EXCEPTION 'effect % is % (terminal): no new attempt', NEW.effect_id, effect_stage
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF EXISTS (SELECT 1 FROM facts WHERE effect_id = NEW.effect_id AND step = NEW.step) THEN
    RAISE EXCEPTION 'effect % step % already has its fact: no new attempt', NEW.effect_id, NEW.step
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  SELECT max(attempt_number) INTO latest FROM attempts WHERE effect_id = NEW.effect_id AND step = NEW.step;
  IF latest > NEW.attempt_number THEN
    RAISE EXCEPTION 'effect % step %: attempt % comes from a run that has not seen attempt %: only the run that knows every attempt adds one',
      NEW.effect_id, NEW.step, NEW.attempt_number, latest
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END;
$$;
--> statement-breakpoint
-- A fact names the destination its step was released to, and never belongs to a rejected or abandoned effect.
CREATE OR REPLACE FUNCTION ledger_guard_fact() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  effect_stage text;
BEGIN
  SELECT stage INTO effect_stage FROM effects WHERE effect_id = NEW.effect_id FOR UPDATE;
  IF NOT EXISTS (SELECT 1 FROM releases WHERE effect_id = NEW.effect_id AND step = NEW.step
                 AND destination = NEW.destination) THEN
    RAISE EXCEPTION 'fact for effect % step % names destination %, which no release of that step goes to',
      NEW.effect_id, NEW.step, NEW.destination
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF effect_stage IN ('rejected', 'abandoned') THEN
    RAISE EXCEPTION 'effect % is %: it can have no fact', NEW.effect_id, effect_stage
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END;
$$;
--> statement-breakpoint
-- `recorded` means every step of the latest release has its fact; `rejected` and `abandoned` mean at least
-- one never will (a step before it may have happened: its fact stays, as the record of what did).
CREATE OR REPLACE FUNCTION ledger_guard_stage_fact() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  steps_left integer;
BEGIN
  IF NEW.stage IS NOT DISTINCT FROM OLD.stage THEN
    RETURN NEW;
  END IF;
  SELECT count(*) INTO steps_left FROM releases r
    WHERE r.effect_id = NEW.effect_id
      AND r.revision = (SELECT max(revision) FROM releases WHERE effect_id = NEW.effect_id)
      AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.effect_id = r.effect_id AND f.step = r.step);
  -- No release at all (an effect approved before releases came with approval): its one fact decides.
  IF NOT EXISTS (SELECT 1 FROM releases WHERE effect_id = NEW.effect_id) THEN
    steps_left := CASE WHEN EXISTS (SELECT 1 FROM facts WHERE effect_id = NEW.effect_id) THEN 0 ELSE 1 END;
  END IF;
  IF NEW.stage = 'recorded' AND steps_left > 0 THEN
    RAISE EXCEPTION 'effect % cannot be recorded without its fact (% step(s) have none)', NEW.effect_id, steps_left
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF NEW.stage IN ('rejected', 'abandoned') AND steps_left = 0 THEN
    RAISE EXCEPTION 'effect % has its fact; it cannot be % (every step has its fact)', NEW.effect_id, NEW.stage
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END;
$$;
