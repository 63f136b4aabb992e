-- Only the run that owns an effect adds its next attempt. Owning means having seen every attempt so far:
-- attempt numbers of an effect's step only grow, so a row numbered at or below one that exists comes from
-- a run that does not know the latest attempt (a zombie activity of a terminated or superseded run, a
-- stale replay, a hand-written fix) and is refused, however it got here. The run that knows the latest
-- attempt reads back before it adds the next (beginAttempt in attempt-log.ts says so without raising).
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
  IF EXISTS (SELECT 1 FROM facts WHERE effect_id = NEW.effect_id) THEN
    RAISE EXCEPTION 'effect % already has its fact: no new attempt', NEW.effect_id
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
