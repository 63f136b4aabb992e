// The effect ID: issued at approval, the workflow ID, the root of every idempotency key. The approval
// API validates with this pattern and the ledger's `effect_id_format` CHECK is built from its source.

/** 1–128 characters: letters, digits and . _ : @ / - (not first). */
export const EFFECT_ID_SOURCE = '^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}$';
export const EFFECT_ID_PATTERN = new RegExp(EFFECT_ID_SOURCE);
export const EFFECT_ID_RULE = 'effectId must be 1-128 chars of [A-Za-z0-9._:@/-], starting with a letter or digit';
