// The bare baseline's one activity, as a user would write it without the ledger: POST the body to the
// provider's keyed API with the effect ID as the Idempotency-Key, and let Temporal's default retry
// policy retry anything that throws.
export interface BareEffectInput {
  effectId: string;
  title: string;
  request: string;
}

export interface BareEffectResult {
  effectId: string;
  objectId: string;
}

export function createBareActivities(providerUrl: string) {
  return {
    async createObject({ effectId, title, request }: BareEffectInput): Promise<BareEffectResult> {
      const response = await fetch(`${providerUrl}/v1/objects`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': effectId },
        // The same body keyed-api's task.create sends.
        body: JSON.stringify({ kind: 'task.create', title, request, metadata: { effect_id: effectId } }),
        signal: AbortSignal.timeout(10_000),
      });
      const text = await response.text();
      if (!response.ok) throw new Error(`provider answered ${response.status}: ${text.slice(0, 200)}`);
      return { effectId, objectId: (JSON.parse(text) as { id: string }).id };
    },
  };
}

export type BareActivities = ReturnType<typeof createBareActivities>;
