-- Verdicts as they cross into the ledger (issue 26): "absent" only over complete coverage (the workflow retries
-- automatically on absent), and a found or confirmed object's ID is never ''. Checked in the activities first
-- (activities/crossing-checks.ts); the database refuses what slips past. NOT VALID: rows already written stay as
-- they were (the table is append-only); every new row is checked.
ALTER TABLE "provider_evidence" ADD CONSTRAINT "absent_is_complete" CHECK ("provider_evidence"."outcome" <> 'absent' OR "provider_evidence"."coverage" IS NOT DISTINCT FROM 'complete') NOT VALID;--> statement-breakpoint
ALTER TABLE "provider_evidence" ADD CONSTRAINT "found_names_object" CHECK ("provider_evidence"."outcome" NOT IN ('found', 'confirmed') OR "provider_evidence"."external_id" IS DISTINCT FROM '') NOT VALID;
