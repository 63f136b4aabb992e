// nats-jetstream: a JetStream stream (the user's). Mechanism: idempotency key. Every publish carries
// `Nats-Msg-Id` = our key, and the server drops a second message with that ID, but only inside the
// stream's `duplicate_window` (NATS' default 2 min): past it the key covers nothing. Each key publishes
// on its own subject, so readback reads the last message on that subject and matches its Nats-Msg-Id
// and body hash: complete while the stream's limits cannot have removed it.
import { JetStreamApiError, jetstream, jetstreamManager, type StreamInfo } from '@nats-io/jetstream';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import type {
  DestinationAdapter,
  LookupResult,
  ReadbackRequest,
  ReadbackResult,
  SendOutcome,
} from '../../domain/destination-contract.js';
import { canonicalJson, sha256Hex } from '../../ledger/fingerprint.js';
import { foreignBodyVerdict } from './exact-match.js';
import { natsJetStreamContract } from './nats-jetstream-contract.js';
import { publishSpan } from './protocol-spans.js';

export { natsJetStreamContract };

export interface JetStreamSettings {
  /** host:port of the NATS server (or the proxy in front of it). */
  servers: string;
  stream: string;
  /** The stream's subjects include `<subjectPrefix>.>`. */
  subjectPrefix: string;
}

/** The effect's own subject: its key, base64url-encoded (subjects allow no `.`, `*`, `>` or spaces in a token). */
export function subjectFor(subjectPrefix: string, idempotencyKey: string): string {
  return `${subjectPrefix}.${Buffer.from(idempotencyKey, 'utf8').toString('base64url')}`;
}

const NANOS_PER_MS = 1_000_000;
const SKEW_MS = 5_000;

/** Why the stream's limits may have removed a message as old as `since`, or null when they cannot have. */
function evictionRisk(info: StreamInfo, since: string): string | null {
  const { max_age, max_msgs, max_bytes } = info.config;
  if (max_msgs > 0 || max_bytes > 0)
    return `the stream drops old messages past ${max_msgs} messages / ${max_bytes} bytes`;
  if (max_age > 0 && Date.now() - Date.parse(since) + SKEW_MS >= max_age / NANOS_PER_MS)
    return `the attempt is older than the stream's max_age (${max_age / NANOS_PER_MS} ms)`;
  return null;
}

/**
 * A publish the server answered with a JetStream API error was not stored; what follows depends on the error
 * (nats-server's errors.json gives each an HTTP-like status). A 4xx is a refusal that holds: another stream
 * expected, a message too large, a failed expectation; a retry cannot change it. A 503 is the server's "not
 * now": the stream is full (10077, `discard: new`), JetStream or its cluster is temporarily unavailable (10008),
 * resources are short (10023); the same key goes again after a pause, and the stream's duplicate window drops a
 * copy should one have been stored after all. Anything else (another 5xx) may have been half done: UNKNOWN,
 * and readback decides.
 */
export function apiErrorOutcome(error: JetStreamApiError): SendOutcome {
  const detail = { reason: errorText(error), errorCode: `${error.name} ${error.code}` };
  const status = error.status;
  if (status >= 400 && status < 500) return { class: 'rejected', httpStatus: status, detail };
  if (status === 503) return { class: 'not_sent', httpStatus: status, detail };
  return {
    class: 'unknown',
    httpStatus: status,
    detail: { ...detail, reason: `the publish may have been stored (${detail.reason})` },
  };
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

export function natsJetStream(settings: JetStreamSettings): DestinationAdapter {
  let connection: Promise<NatsConnection> | undefined;
  // One connection, reused while it lives. No reconnects: the client would buffer a publish and send it
  // on its own later; closed, the next call connects anew.
  const connected = async (timeoutMs: number) => {
    const current = connection;
    if (current) {
      const nc = await current.catch(() => undefined);
      if (nc && !nc.isClosed()) return nc;
    }
    connection = connect({ servers: settings.servers, reconnect: false, timeout: timeoutMs, name: 'effect-ledger' });
    connection.catch(() => {});
    return connection;
  };
  const drop = async (nc: NatsConnection) => {
    if (connection) connection = undefined;
    await nc.close().catch(() => {});
  };

  async function readLast(request: ReadbackRequest) {
    const nc = await connected(10_000);
    const jsm = await jetstreamManager(nc, { timeout: 10_000 });
    const info = await jsm.streams.info(settings.stream);
    const message = await jsm.streams.getMessage(settings.stream, {
      last_by_subj: subjectFor(settings.subjectPrefix, request.idempotencyKey),
    });
    request.onPage?.();
    return { info, message };
  }

  const ours = (message: { header?: { get(k: string): string }; data: Uint8Array }, request: ReadbackRequest) =>
    message.header?.get('Nats-Msg-Id') === request.idempotencyKey &&
    sha256Hex(Buffer.from(message.data).toString('utf8')) === request.bodySha256;

  return {
    ...natsJetStreamContract,
    async send({ idempotencyKey, package: pkg, timeoutMs }): Promise<SendOutcome> {
      let nc: NatsConnection;
      try {
        nc = await connected(timeoutMs);
      } catch (error) {
        // Nothing is published before the connection is up.
        return { class: 'not_sent', detail: { reason: `no connection to NATS (${errorText(error)})` } };
      }
      const data = canonicalJson(pkg.body);
      const meta = headers();
      meta.set('Effect-Id', String(pkg.body.effect_id));
      try {
        const js = jetstream(nc, { timeout: timeoutMs });
        const subject = subjectFor(settings.subjectPrefix, idempotencyKey);
        const ack = await publishSpan(
          settings.servers,
          { name: subject, template: `${settings.subjectPrefix}.*` },
          idempotencyKey,
          () =>
            js.publish(subject, data, {
              msgID: idempotencyKey,
              headers: meta,
              expect: { streamName: settings.stream },
              timeout: timeoutMs,
            }),
        );
        // The window the stream really keeps, recorded with the answer (the contract declares the default).
        const info = await jetstreamManager(nc, { timeout: timeoutMs })
          .then((jsm) => jsm.streams.info(settings.stream))
          .catch(() => undefined);
        const duplicateWindowMs = info ? info.config.duplicate_window / NANOS_PER_MS : undefined;
        return {
          class: 'confirmed',
          httpStatus: 200,
          externalId: `${ack.stream}:${ack.seq}`,
          occurredAt: new Date().toISOString(),
          detail: {
            reason: ack.duplicate ? 'the stream already holds our message ID (within its duplicate window)' : 'stored',
            body: { stream: ack.stream, seq: ack.seq, duplicate: ack.duplicate, duplicateWindowMs },
            replayed: ack.duplicate,
          },
        };
      } catch (error) {
        const name = (error as Error | undefined)?.name;
        // No stream listens on the subject: nothing was stored.
        if (name === 'NoRespondersError')
          return { class: 'not_sent', detail: { reason: `no stream answers (${errorText(error)})`, errorCode: name } };
        // The server answered with an API error: it did not store the message. Its class is the error's.
        if (error instanceof JetStreamApiError) return apiErrorOutcome(error);
        // Whatever else broke (a timeout, a closed connection) the server may have stored it: the
        // connection goes with the call, so no late answer or buffered copy outlives it.
        await drop(nc);
        return {
          class: 'unknown',
          detail: { reason: `the publish may have been stored (${errorText(error)})`, errorCode: name },
        };
      }
    },

    async readBack(request): Promise<ReadbackResult> {
      let read: Awaited<ReturnType<typeof readLast>>;
      try {
        read = await readLast(request);
      } catch (error) {
        const nc = await connection?.catch(() => undefined);
        if (nc) await drop(nc);
        throw error;
      }
      const { info, message } = read;
      const method = 'last_on_subject';
      const windowMs = info.config.duplicate_window / NANOS_PER_MS;
      const keyNote =
        Date.now() - Date.parse(request.since) > windowMs
          ? `; the first attempt is older than the ${windowMs} ms duplicate window, so the key no longer covers it`
          : '';
      if (message && ours(message, request)) {
        return {
          outcome: 'found',
          coverage: 'complete',
          externalId: `${settings.stream}:${message.seq}`,
          occurredAt: message.time.toISOString(),
          detail: { method, reason: `the last message on our subject carries our key and body${keyNote}`, scanned: 1 },
        };
      }
      if (message) return foreignBodyVerdict(method, [`${settings.stream}:${message.seq}`], 1);
      const risk = evictionRisk(info, request.since);
      if (risk)
        return {
          outcome: 'inconclusive',
          coverage: 'partial',
          detail: { method, reason: `nothing on our subject, but ${risk}` },
        };
      return {
        outcome: 'absent',
        coverage: 'complete',
        detail: { method, reason: `no message on our subject${keyNote}`, scanned: 0 },
      };
    },

    // The connection keeps the process alive until closed: the worker closes it once it has stopped.
    async close() {
      const nc = await connection?.catch(() => undefined);
      connection = undefined;
      await nc?.close().catch(() => {});
    },

    // Messages have no URLs: a person confirms with `<stream>:<seq>`.
    resolveUrl: () => null,
    objectUrlShape: 'none (confirm with <stream>:<sequence>)',

    async lookup(externalId, request): Promise<LookupResult> {
      const [stream, seqText] = externalId.split(':');
      const seq = Number(seqText);
      if (stream !== settings.stream || !Number.isSafeInteger(seq) || seq < 1) return { exists: false };
      const nc = await connected(10_000);
      const jsm = await jetstreamManager(nc, { timeout: 10_000 });
      const message = await jsm.streams.getMessage(settings.stream, { seq });
      if (!message) return { exists: false };
      return {
        exists: true,
        externalId,
        occurredAt: message.time.toISOString(),
        matchesRelease:
          message.subject === subjectFor(settings.subjectPrefix, request.idempotencyKey) && ours(message, request),
      };
    },
  };
}
