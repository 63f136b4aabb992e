// How the audit reads a destination's own records: every object there that carries one of our effect IDs,
// with the key it was created under and the hash of the body it holds. One small reader per destination;
// against our simulator they read its public listing (keyed API) and its dashboard (the social feed's
// control API). A real deployment would put the provider's dashboard or export API behind the same shape.

export interface DestinationObject {
  destination: string;
  id: string;
  /** The effect ID our adapter stamped into the object's metadata; null when it carries none (not ours). */
  effectId: string | null;
  bodySha256: string | null;
  /** The idempotency key the provider stored the object under; undefined where the destination has no keys. */
  idempotencyKey?: string | null;
  createdAt: string;
}

export interface DestinationRecords {
  destination: string;
  /** Whether the destination stores an idempotency key per object (then every object of ours must carry one). */
  keyed: boolean;
  /** Every object, newest first; stops once objects are older than `since` (when the destination lists by time). */
  objects(since?: Date): Promise<DestinationObject[]>;
}

interface RawObject {
  id: string;
  created_at: string;
  body_sha256?: string;
  metadata?: Record<string, string> | null;
  idempotency_key?: string | null;
}

/** A GET; a 5xx or a dropped connection is transient and tried again a few times. */
async function getJson<T>(url: string, tries = 4): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(30_000) });
      if (response.ok) return (await response.json()) as T;
      await response.body?.cancel();
      if (response.status < 500 || attempt >= tries) throw new Error(`GET ${url} answered ${response.status}`);
    } catch (error) {
      if (attempt >= tries || (error as Error).message.includes('answered 4')) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, 250 * attempt));
  }
}

function toObject(destination: string, raw: RawObject, keyed: boolean): DestinationObject {
  return {
    destination,
    id: raw.id,
    effectId: typeof raw.metadata?.effect_id === 'string' ? raw.metadata.effect_id : null,
    bodySha256: raw.body_sha256 ?? null,
    ...(keyed ? { idempotencyKey: raw.idempotency_key ?? null } : {}),
    createdAt: raw.created_at,
  };
}

/** The Stripe-style API: its own listing (newest first, cursor paging) covers every object. */
export function keyedApiRecords(baseUrl: string, destination = 'keyed-api'): DestinationRecords {
  return {
    destination,
    keyed: true,
    async objects(since) {
      const all: DestinationObject[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await getJson<{ data: RawObject[]; has_more: boolean }>(
          `${baseUrl}/v1/objects?limit=100${after ? `&starting_after=${encodeURIComponent(after)}` : ''}`,
        );
        for (const raw of page.data) {
          if (since && Date.parse(raw.created_at) < since.getTime()) return all;
          all.push(toObject(destination, raw, true));
        }
        if (!page.has_more || page.data.length === 0) return all;
        after = page.data.at(-1)?.id;
      }
    },
  };
}

/** The key-less feed: its public listing shows only the newest posts, so read the provider's dashboard. */
export function socialFeedRecords(baseUrl: string, destination = 'social-feed'): DestinationRecords {
  return {
    destination,
    keyed: false,
    async objects(since) {
      const { data } = await getJson<{ data: RawObject[] }>(`${baseUrl}/_control/social-posts`);
      return data
        .filter((raw) => !since || Date.parse(raw.created_at) >= since.getTime())
        .map((raw) => toObject(destination, raw, false));
    },
  };
}

/** The destinations this deployment knows, read at one provider base URL (the simulator serves both). */
export function destinationRecords(baseUrl: string): DestinationRecords[] {
  return [keyedApiRecords(baseUrl), socialFeedRecords(baseUrl)];
}
