CREATE TABLE "attempts" (
	"attempt_id" bigserial PRIMARY KEY NOT NULL,
	"effect_id" text NOT NULL,
	"step" text NOT NULL,
	"attempt_number" integer NOT NULL,
	"idempotency_key" text NOT NULL,
	"release_revision" integer NOT NULL,
	"workflow_run_id" text NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "attempt_number_positive" CHECK ("attempts"."attempt_number" >= 1),
	CONSTRAINT "step_format" CHECK ("attempts"."step" ~ '^[a-z][a-z0-9_-]{0,31}$'),
	CONSTRAINT "key_is_effect_scoped" CHECK ("attempts"."idempotency_key" = "attempts"."effect_id" OR "attempts"."idempotency_key" = "attempts"."effect_id" || ':' || "attempts"."step")
);
--> statement-breakpoint
CREATE TABLE "decisions" (
	"decision_id" bigserial PRIMARY KEY NOT NULL,
	"request_ref" text NOT NULL,
	"effect_id" text NOT NULL,
	"kind" text NOT NULL,
	"actor" text NOT NULL,
	"reason" text NOT NULL,
	"payload" jsonb NOT NULL,
	"accepted" boolean NOT NULL,
	"rejection_reason" text,
	"decided_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "decision_kind_known" CHECK ("decisions"."kind" IN ('approve-retry', 'confirm-delivery', 'abandon', 'unrecognised')),
	CONSTRAINT "rejected_decision_says_why" CHECK ("decisions"."accepted" OR "decisions"."rejection_reason" IS NOT NULL),
	CONSTRAINT "accepted_decision_has_actor" CHECK (NOT "decisions"."accepted" OR length("decisions"."actor") BETWEEN 1 AND 200)
);
--> statement-breakpoint
CREATE TABLE "effects" (
	"effect_id" text PRIMARY KEY NOT NULL,
	"destination" text NOT NULL,
	"operation" text NOT NULL,
	"fingerprint" text NOT NULL,
	"payload" jsonb NOT NULL,
	"approved_by" text NOT NULL,
	"authorization_ref" text NOT NULL,
	"summary" text NOT NULL,
	"stage" text DEFAULT 'prepared' NOT NULL,
	"mechanism" text NOT NULL,
	"key_retention_seconds" integer,
	"approved_at" timestamp with time zone DEFAULT now() NOT NULL,
	"stage_changed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "effect_id_format" CHECK ("effects"."effect_id" ~ '^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}$'),
	CONSTRAINT "fingerprint_is_sha256" CHECK ("effects"."fingerprint" ~ '^[0-9a-f]{64}$'),
	CONSTRAINT "stage_known" CHECK ("effects"."stage" IN ('prepared', 'released', 'attempted', 'unknown', 'reconciled', 'recorded', 'rejected', 'abandoned')),
	CONSTRAINT "mechanism_known" CHECK ("effects"."mechanism" IN ('idempotency_key', 'transactional', 'natural_key', 'none')),
	CONSTRAINT "approved_by_present" CHECK (length("effects"."approved_by") BETWEEN 1 AND 200),
	CONSTRAINT "authorization_ref_present" CHECK (length("effects"."authorization_ref") BETWEEN 1 AND 200),
	CONSTRAINT "summary_length" CHECK (length("effects"."summary") BETWEEN 1 AND 300),
	CONSTRAINT "destination_length" CHECK (length("effects"."destination") BETWEEN 1 AND 64),
	CONSTRAINT "operation_length" CHECK (length("effects"."operation") BETWEEN 1 AND 64)
);
--> statement-breakpoint
CREATE TABLE "facts" (
	"effect_id" text PRIMARY KEY NOT NULL,
	"destination" text NOT NULL,
	"external_id" text NOT NULL,
	"external_url" text,
	"occurred_at" timestamp with time zone NOT NULL,
	"confirmed_by" text NOT NULL,
	"evidence_id" bigint NOT NULL,
	"recorded_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "confirmed_by_known" CHECK ("facts"."confirmed_by" IN ('provider_response', 'readback', 'human')),
	CONSTRAINT "external_id_length" CHECK (length("facts"."external_id") BETWEEN 1 AND 2000)
);
--> statement-breakpoint
CREATE TABLE "provider_evidence" (
	"evidence_id" bigserial PRIMARY KEY NOT NULL,
	"effect_id" text NOT NULL,
	"attempt_id" bigint,
	"kind" text NOT NULL,
	"outcome" text NOT NULL,
	"http_status" integer,
	"external_id" text,
	"external_url" text,
	"coverage" text,
	"detail" jsonb NOT NULL,
	"recorded_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "evidence_kind_known" CHECK ("provider_evidence"."kind" IN ('response', 'readback', 'human')),
	CONSTRAINT "evidence_outcome_known" CHECK ("provider_evidence"."outcome" IN ('not_sent', 'confirmed', 'rejected', 'unknown', 'found', 'absent', 'inconclusive')),
	CONSTRAINT "coverage_known" CHECK ("provider_evidence"."coverage" IS NULL OR "provider_evidence"."coverage" IN ('complete', 'partial')),
	CONSTRAINT "response_has_attempt" CHECK ("provider_evidence"."kind" <> 'response' OR "provider_evidence"."attempt_id" IS NOT NULL)
);
--> statement-breakpoint
CREATE TABLE "releases" (
	"effect_id" text NOT NULL,
	"revision" integer NOT NULL,
	"target" text NOT NULL,
	"package" jsonb NOT NULL,
	"body_sha256" text NOT NULL,
	"released_by" text NOT NULL,
	"released_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "revision_positive" CHECK ("releases"."revision" >= 1),
	CONSTRAINT "body_sha256_format" CHECK ("releases"."body_sha256" ~ '^[0-9a-f]{64}$'),
	CONSTRAINT "target_length" CHECK (length("releases"."target") BETWEEN 1 AND 300)
);
--> statement-breakpoint
ALTER TABLE "attempts" ADD CONSTRAINT "attempts_effect_id_effects_effect_id_fk" FOREIGN KEY ("effect_id") REFERENCES "public"."effects"("effect_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "decisions" ADD CONSTRAINT "decisions_effect_id_effects_effect_id_fk" FOREIGN KEY ("effect_id") REFERENCES "public"."effects"("effect_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "facts" ADD CONSTRAINT "facts_effect_id_effects_effect_id_fk" FOREIGN KEY ("effect_id") REFERENCES "public"."effects"("effect_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "facts" ADD CONSTRAINT "facts_evidence_id_provider_evidence_evidence_id_fk" FOREIGN KEY ("evidence_id") REFERENCES "public"."provider_evidence"("evidence_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "provider_evidence" ADD CONSTRAINT "provider_evidence_effect_id_effects_effect_id_fk" FOREIGN KEY ("effect_id") REFERENCES "public"."effects"("effect_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "provider_evidence" ADD CONSTRAINT "provider_evidence_attempt_id_attempts_attempt_id_fk" FOREIGN KEY ("attempt_id") REFERENCES "public"."attempts"("attempt_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "releases" ADD CONSTRAINT "releases_effect_id_effects_effect_id_fk" FOREIGN KEY ("effect_id") REFERENCES "public"."effects"("effect_id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "attempts_effect_step_number_uq" ON "attempts" USING btree ("effect_id","step","attempt_number");--> statement-breakpoint
CREATE UNIQUE INDEX "decisions_request_ref_uq" ON "decisions" USING btree ("request_ref");--> statement-breakpoint
CREATE INDEX "decisions_effect_idx" ON "decisions" USING btree ("effect_id");--> statement-breakpoint
CREATE INDEX "effects_stage_idx" ON "effects" USING btree ("stage","stage_changed_at");--> statement-breakpoint
CREATE UNIQUE INDEX "facts_destination_external_id_uq" ON "facts" USING btree ("destination","external_id");--> statement-breakpoint
CREATE UNIQUE INDEX "evidence_one_response_per_attempt_uq" ON "provider_evidence" USING btree ("attempt_id") WHERE "provider_evidence"."kind" = 'response';--> statement-breakpoint
CREATE INDEX "evidence_effect_idx" ON "provider_evidence" USING btree ("effect_id");--> statement-breakpoint
CREATE UNIQUE INDEX "releases_effect_revision_uq" ON "releases" USING btree ("effect_id","revision");