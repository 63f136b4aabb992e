-- A decision's reference names one decision of one effect: a caller's decision ID (`update:<id>`) sent again after
-- the run continued as new is the same decision, answered as already taken, while another effect may use the same
-- ID for its own. The run that wrote a decision is kept, so its own retried write is not mistaken for a repeat.
DROP INDEX "decisions_request_ref_uq";--> statement-breakpoint
ALTER TABLE "decisions" ADD COLUMN "workflow_run_id" text;--> statement-breakpoint
CREATE UNIQUE INDEX "decisions_effect_request_ref_uq" ON "decisions" USING btree ("effect_id","request_ref");
