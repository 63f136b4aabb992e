-- Step keys cannot collide: effect `A` step `x` was `A:x`, the main key of effect `A:x`. A non-main step's
-- key is now effect ID + '~' + step ('~' is outside the effect ID's characters); the main step's is the effect ID.
ALTER TABLE "attempts" DROP CONSTRAINT "key_is_effect_scoped";--> statement-breakpoint
ALTER TABLE "attempts" ADD CONSTRAINT "key_is_effect_scoped" CHECK (("attempts"."step" = 'main' AND "attempts"."idempotency_key" = "attempts"."effect_id") OR ("attempts"."step" <> 'main' AND "attempts"."idempotency_key" = "attempts"."effect_id" || '~' || "attempts"."step"));