-- An effect's latest evidence by one index probe: the list by stage (effect-ledger list, thousands waiting after an
-- outage) asks for it per effect, ORDER BY evidence_id DESC LIMIT 1, which on (effect_id) alone the planner served
-- with a backward scan of the whole table's primary key (3.5 s for 10,000 effects and 14,000 rows).
DROP INDEX "evidence_effect_idx";--> statement-breakpoint
CREATE INDEX "evidence_effect_idx" ON "provider_evidence" USING btree ("effect_id","evidence_id");