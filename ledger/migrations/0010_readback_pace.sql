-- Readback requests take turns per destination, across every worker: readback_pace holds each destination's next
-- free moment (ledger/readback-pace.ts). Operational state that passes upsert, not an append-only record.
CREATE TABLE "readback_pace" (
	"destination" text PRIMARY KEY NOT NULL,
	"next_at" timestamp with time zone NOT NULL,
	CONSTRAINT "readback_pace_destination_length" CHECK (length("readback_pace"."destination") BETWEEN 1 AND 200)
);--> statement-breakpoint
-- The runtime role takes turns: an upsert that moves a destination's next_at forward.
GRANT SELECT, INSERT, UPDATE ON readback_pace TO effect_ledger_runtime;
