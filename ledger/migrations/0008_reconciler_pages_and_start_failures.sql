-- The ledger reconciler pages through unfinished effects by effect ID (effects_unfinished_idx: terminal
-- effects, the bulk of the table over time, are not in it), and remembers the effects it could not start,
-- and why, in start_failures: operational state that passes upsert and delete, not an append-only record.
CREATE TABLE "start_failures" (
	"effect_id" text PRIMARY KEY NOT NULL,
	"reason" text NOT NULL,
	"first_failed_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_failed_at" timestamp with time zone DEFAULT now() NOT NULL,
	"failures" integer DEFAULT 1 NOT NULL,
	CONSTRAINT "start_failure_reason_length" CHECK (length("start_failures"."reason") BETWEEN 1 AND 2000),
	CONSTRAINT "start_failures_positive" CHECK ("start_failures"."failures" >= 1),
	CONSTRAINT "start_failure_times_ordered" CHECK ("start_failures"."first_failed_at" <= "start_failures"."last_failed_at")
);
--> statement-breakpoint
ALTER TABLE "start_failures" ADD CONSTRAINT "start_failures_effect_id_effects_effect_id_fk" FOREIGN KEY ("effect_id") REFERENCES "public"."effects"("effect_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "effects_unfinished_idx" ON "effects" USING btree ("effect_id") WHERE "effects"."stage" NOT IN ('recorded', 'rejected', 'abandoned');--> statement-breakpoint
-- The runtime role keeps start_failures current: a failed start upserts its row, a start or a full pass deletes it.
GRANT SELECT, INSERT, UPDATE, DELETE ON start_failures TO effect_ledger_runtime;
