-- Append-only records and a frozen effect identity, enforced by the database so no code path
-- (a retried activity, a hand-written fix, a future bug) can rewrite history.
CREATE FUNCTION ledger_forbid_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ledger table % is append-only: % refused', TG_TABLE_NAME, TG_OP
    USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
--> statement-breakpoint
CREATE TRIGGER releases_append_only BEFORE UPDATE OR DELETE ON releases
  FOR EACH ROW EXECUTE FUNCTION ledger_forbid_change();
--> statement-breakpoint
CREATE TRIGGER attempts_append_only BEFORE UPDATE OR DELETE ON attempts
  FOR EACH ROW EXECUTE FUNCTION ledger_forbid_change();
--> statement-breakpoint
CREATE TRIGGER provider_evidence_append_only BEFORE UPDATE OR DELETE ON provider_evidence
  FOR EACH ROW EXECUTE FUNCTION ledger_forbid_change();
--> statement-breakpoint
CREATE TRIGGER facts_append_only BEFORE UPDATE OR DELETE ON facts
  FOR EACH ROW EXECUTE FUNCTION ledger_forbid_change();
--> statement-breakpoint
CREATE TRIGGER decisions_append_only BEFORE UPDATE OR DELETE ON decisions
  FOR EACH ROW EXECUTE FUNCTION ledger_forbid_change();
--> statement-breakpoint
-- An effect row may only move its stage; what was approved never changes and is never deleted.
-- A terminal stage (recorded, rejected, abandoned) is final.
CREATE FUNCTION ledger_guard_effect() RETURNS trigger LANGUAGE plpgsql AS $$
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
  IF OLD.stage IN ('recorded', 'rejected', 'abandoned') AND NEW.stage <> OLD.stage THEN
    RAISE EXCEPTION 'effect % is % (terminal); cannot move to %', OLD.effect_id, OLD.stage, NEW.stage
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER effects_guard BEFORE UPDATE OR DELETE ON effects
  FOR EACH ROW EXECUTE FUNCTION ledger_guard_effect();
--> statement-breakpoint
-- A fact names the same destination as its effect.
CREATE FUNCTION ledger_guard_fact() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  effect_destination text;
BEGIN
  SELECT destination INTO effect_destination FROM effects WHERE effect_id = NEW.effect_id;
  IF effect_destination IS DISTINCT FROM NEW.destination THEN
    RAISE EXCEPTION 'fact for effect % names destination %, effect has %',
      NEW.effect_id, NEW.destination, effect_destination
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER facts_destination_matches BEFORE INSERT ON facts
  FOR EACH ROW EXECUTE FUNCTION ledger_guard_fact();
