// How the audit reads a destination's own records: every object there that carries one of our effect IDs,
// with the key it was created under and the hash of the body it holds. One small reader per destination;
// against our simulator they read its public listing (keyed API) and its dashboard (the social feed's
// control API). A real deployment would put the provider's dashboard or export API behind the same shape.
// The real destinations (Mailpit, JetStream, the orders table) are read at their own servers.
import { createHash } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import postgres from 'postgres';
import type { HttpDestinationSpec } from '../../activities/destinations/http-spec.js';
import { socialFeedSpec } from '../../activities/destinations/social-feed.js';

/** The documented cap of a declaration's listing readback, if it has one. */
function listedAtMostOf(spec: HttpDestinationSpec): number | undefined {
  for (const read of spec.readback ?? []) if (read.by === 'listing' && read.listedAtMost) return read.listedAtMost;
  return undefined;
}

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
  /**
   * The provider shows its readers only its newest this many objects (a capped listing): an object with that many
   * newer ones is out of every readback's sight, found only by a person at the provider's dashboard.
   */
  shownAtMost?: number;
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
    shownAtMost: listedAtMostOf(socialFeedSpec),
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

// ---- the real destinations: each read directly at its server (never through a fault proxy) ----------------

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/**
 * email-smtp: every message in the Mailpit mailbox (its listing, newest first, pages of 200), with the
 * headers our adapter stamps. The object's ID is its Message-ID: what the ledger's fact names.
 */
export function emailRecords(mailpitUrl: string, destination = 'email-smtp'): DestinationRecords {
  const api = `${mailpitUrl.replace(/\/$/, '')}/api/v1`;
  return {
    destination,
    keyed: false,
    async objects(since) {
      const all: DestinationObject[] = [];
      for (let start = 0; ; start += 200) {
        const page = await getJson<{
          total: number;
          messages: Array<{ ID: string; MessageID: string; Created: string }>;
        }>(`${api}/messages?start=${start}&limit=200`);
        for (const m of page.messages) {
          if (since && Date.parse(m.Created) < since.getTime()) return all;
          const h = await getJson<Record<string, string[]>>(`${api}/message/${encodeURIComponent(m.ID)}/headers`);
          all.push({
            destination,
            id: m.MessageID,
            // The step's reference where the adapter stamps one (a further step's `effectID~step`).
            effectId: h['X-Effect-Ref']?.[0] ?? h['X-Effect-Id']?.[0] ?? null,
            bodySha256: h['X-Effect-Body-Sha256']?.[0] ?? null,
            createdAt: m.Created,
          });
        }
        if (page.messages.length === 0 || start + page.messages.length >= page.total) return all;
      }
    },
  };
}

/** nats-jetstream: every message of the stream, by sequence; the key is its Nats-Msg-Id. */
export function jetStreamRecords(servers: string, stream: string, destination = 'nats-jetstream'): DestinationRecords {
  return {
    destination,
    keyed: true,
    async objects(since) {
      const nc = await connect({ servers, reconnect: false, timeout: 10_000 });
      try {
        const jsm = await jetstreamManager(nc, { timeout: 10_000 });
        const { state } = await jsm.streams.info(stream);
        const all: DestinationObject[] = [];
        for (let seq = state.last_seq; seq >= state.first_seq && seq > 0; seq--) {
          const message = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
          if (!message) continue; // deleted
          if (since && message.time < since) break;
          all.push({
            destination,
            id: `${stream}:${message.seq}`,
            effectId: message.header?.get('Effect-Id') || null,
            bodySha256: sha256(Buffer.from(message.data).toString('utf8')),
            idempotencyKey: message.header?.get('Nats-Msg-Id') || null,
            createdAt: message.time.toISOString(),
          });
        }
        return all;
      } finally {
        await nc.close().catch(() => {});
      }
    },
  };
}

/** orders-sql: every row of the user's orders table; the key is its unique effect_key. */
export function ordersRecords(databaseUrl: string, destination = 'orders-sql'): DestinationRecords {
  return {
    destination,
    keyed: true,
    async objects(since) {
      const sql = postgres(databaseUrl, { max: 1, onnotice: () => {}, fetch_types: false });
      try {
        const rows = await sql<
          { id: string; effectId: string | null; bodySha256: string; key: string; createdAt: Date }[]
        >`SELECT order_id::text AS id, body->>'effect_id' AS "effectId", body_sha256 AS "bodySha256",
                 effect_key AS key, created_at AS "createdAt"
          FROM orders WHERE created_at >= ${since ?? new Date(0)} ORDER BY order_id DESC`;
        return rows.map((r) => ({
          destination,
          id: r.id,
          effectId: r.effectId,
          bodySha256: r.bodySha256,
          idempotencyKey: r.key,
          createdAt: r.createdAt.toISOString(),
        }));
      } finally {
        await sql.end({ timeout: 1 });
      }
    },
  };
}

/** The real destinations a worker is configured for (settings from the environment), read at their servers. */
export function realDestinationRecords(settings: {
  email?: { mailboxUrl: string };
  jetstream?: { servers: string; stream: string };
  ordersDatabaseUrl?: string;
}): DestinationRecords[] {
  return [
    ...(settings.email ? [emailRecords(settings.email.mailboxUrl)] : []),
    ...(settings.jetstream ? [jetStreamRecords(settings.jetstream.servers, settings.jetstream.stream)] : []),
    ...(settings.ordersDatabaseUrl ? [ordersRecords(settings.ordersDatabaseUrl)] : []),
  ];
}
