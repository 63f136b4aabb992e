-- Least privilege for everything that is not a migration. Workers, the CLI and backend code connect as a
-- member of effect_ledger_runtime: they read, insert into the append-only records, and move an effect's
-- stage — nothing more. No UPDATE or DELETE on a record, no TRUNCATE (which no trigger sees), no DDL:
-- the tables belong to the owner, who runs the migrations. A deployment creates its login role with
--   CREATE ROLE effect_ledger_worker LOGIN PASSWORD '…' IN ROLE effect_ledger_runtime;
-- Roles are cluster-wide, grants are per database: the role is made once (or beforehand by a DBA when
-- the owner may not create roles), the grants in every ledger database. A migration that adds a table
-- grants on it explicitly; nothing is granted by default.
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'effect_ledger_runtime') THEN
    CREATE ROLE effect_ledger_runtime NOLOGIN;
  END IF;
EXCEPTION
  -- Another database's migration created it at the same moment.
  WHEN duplicate_object OR unique_violation THEN NULL;
END
$$;
--> statement-breakpoint
GRANT USAGE ON SCHEMA public TO effect_ledger_runtime;
--> statement-breakpoint
GRANT SELECT, INSERT ON effects, releases, attempts, provider_evidence, facts, decisions, revisions
  TO effect_ledger_runtime;
--> statement-breakpoint
-- The one thing that moves: an effect's stage (and, with a person's revision, its current revision). The
-- guards' SELECT … FOR UPDATE on effects needs an UPDATE grant too; this column grant is it. The
-- effects_guard trigger still refuses any other change and any move out of a terminal stage.
GRANT UPDATE (stage, stage_changed_at, revision) ON effects TO effect_ledger_runtime;
--> statement-breakpoint
-- The append-only records' IDs (bigserial).
GRANT USAGE ON SEQUENCE attempts_attempt_id_seq, provider_evidence_evidence_id_seq, decisions_decision_id_seq
  TO effect_ledger_runtime;
