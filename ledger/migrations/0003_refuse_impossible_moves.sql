-- The ledger refuses what must never happen, however a workflow (or a hand-written fix) got there:
--   * a new attempt for an effect that is terminal (recorded, rejected, abandoned) or already has its fact;
--   * a fact for an effect that was rejected or abandoned;
--   * an effect moved to `recorded` without its fact, or to `rejected` / `abandoned` with one.
-- Each guard locks the effect row first, so two transactions racing on one effect are decided in turn.
-- progress.ts writes the fact before the stage, in one transaction, so these hold on every code path.
CREATE FUNCTION ledger_guard_attempt() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  effect_stage text;
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
  IF EXISTS (SELECT 1 FROM facts WHERE effect_id = NEW.effect_id) THEN
    RAISE EXCEPTION 'effect % already has its fact: no new attempt', NEW.effect_id
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER attempts_guard BEFORE INSERT ON attempts
  FOR EACH ROW EXECUTE FUNCTION ledger_guard_attempt();
--> statement-breakpoint
-- A fact names the same destination as its effect, and never belongs to a rejected or abandoned effect.
CREATE OR REPLACE FUNCTION ledger_guard_fact() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  effect_destination text;
  effect_stage text;
BEGIN
  SELECT destination, stage INTO effect_destination, effect_stage FROM effects
    WHERE effect_id = NEW.effect_id FOR UPDATE;
  IF effect_destination IS DISTINCT FROM NEW.destination THEN
    RAISE EXCEPTION 'fact for effect % names destination %, effect has %',
      NEW.effect_id, NEW.destination, effect_destination
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
-- `recorded` means the fact is in the ledger; `rejected` and `abandoned` mean it never will be.
CREATE FUNCTION ledger_guard_stage_fact() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  has_fact boolean;
BEGIN
  IF NEW.stage IS NOT DISTINCT FROM OLD.stage THEN
    RETURN NEW;
  END IF;
  has_fact := EXISTS (SELECT 1 FROM facts WHERE effect_id = NEW.effect_id);
  IF NEW.stage = 'recorded' AND NOT has_fact THEN
    RAISE EXCEPTION 'effect % cannot be recorded without its fact', NEW.effect_id
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  IF NEW.stage IN ('rejected', 'abandoned') AND has_fact THEN
    RAISE EXCEPTION 'effect % has its fact; it cannot be %', NEW.effect_id, NEW.stage
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER effects_stage_matches_fact BEFORE UPDATE OF stage ON effects
  FOR EACH ROW EXECUTE FUNCTION ledger_guard_stage_fact();
