// email-smtp: email over SMTP into a Mailpit mailbox. Mechanism: natural key. SMTP honours no
// idempotency key and nothing here drops a second copy (Mailpit's duplicate-ID dropping stays off), so
// the adapter gives every message a Message-ID derived from our key, and stamps the effect ID, the step's
// reference (its key: `E`, `E~email`, `E#r2`) and the released body's hash in headers. Readback searches
// Mailpit's API for that Message-ID; its search matches substrings, so each hit is compared exactly, by the
// step's reference and body. Mailpit prunes its oldest messages past its `--max`: absence counts only while
// nothing was pruned or the oldest message predates the attempt. One SMTP session per message, bounded as a
// whole by the call timeout (smtp-session.ts).
import nodemailer from 'nodemailer';
import {
  DEFAULT_CLOCK_TOLERANCE_MS,
  type DestinationAdapter,
  type LookupResult,
  type ReadbackRequest,
  type ReadbackResult,
  type SendOutcome,
} from '../../domain/destination-contract.js';
import { canonicalJson, sha256Hex } from '../../ledger/fingerprint.js';
import { emailSmtpContract } from './email-smtp-contract.js';
import { foreignBodyVerdict } from './exact-match.js';
import { getJson } from './http-read.js';
import { smtpSpan } from './protocol-spans.js';
import { openSmtpSession, SessionDeadline, type SmtpSession } from './smtp-session.js';

export { emailSmtpContract };

export interface EmailSettings {
  smtpHost: string;
  smtpPort: number;
  /** Mailpit's HTTP base URL (its API and web UI). */
  mailboxUrl: string;
  from: string;
  /** Mailpit's `--max`: past it, the oldest messages are pruned (0: never). */
  mailboxMaxMessages: number;
}

/** The domain part of our Message-IDs. */
const MESSAGE_ID_DOMAIN = 'effect-ledger.invalid';

/**
 * The Message-ID for a key (without angle brackets): every character outside [A-Za-z0-9_-] escaped as
 * `=XX`, so `:`, `@`, `~` and runs of dots stay legal and distinct keys never share an ID.
 */
export function messageIdFor(idempotencyKey: string): string {
  const local = Buffer.from(idempotencyKey, 'utf8')
    .toString('latin1')
    .replace(/[^A-Za-z0-9_-]/g, (c) => `=${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
  return `${local}@${MESSAGE_ID_DOMAIN}`;
}

/** Mailpit's clock against the ledger's: the same tolerance a declared listing gets by default (was 5 s). */
const SKEW_MS = DEFAULT_CLOCK_TOLERANCE_MS;

interface MailpitSummary {
  ID: string;
  MessageID: string;
  Created: string;
}

/**
 * What each phase of a session that did not end in 250 deserves. Nothing was stored while the final "." had
 * not left us (no connection, no greeting, a cut or the deadline before it), nor after a 4xx (transient) or
 * 5xx (refused) reply; only a session that ended after the "." and before its reply may have stored it.
 */
function classifySmtpError(error: unknown, session: SmtpSession): SendOutcome {
  const { code, command, responseCode, message } = error as {
    code?: string;
    command?: string;
    responseCode?: number;
    message?: string;
  };
  const said = error instanceof SessionDeadline ? error.message : `${command ?? '?'}: ${message ?? String(error)}`;
  const detail = { reason: said, errorCode: error instanceof SessionDeadline ? error.name : code };
  if (!session.connected) return { class: 'not_sent', detail: { ...detail, reason: `no SMTP session (${said})` } };
  // A 5xx reply at any command: the server refused the message and stored nothing.
  if (responseCode !== undefined && responseCode >= 500) return { class: 'rejected', httpStatus: responseCode, detail };
  // A 4xx reply: transiently refused, not stored (RFC 5321 4.2.1).
  if (responseCode !== undefined && responseCode >= 400) return { class: 'not_sent', httpStatus: responseCode, detail };
  if (!session.endOfDataWritten)
    return {
      class: 'not_sent',
      detail: {
        ...detail,
        reason: `the session ended before the message's final "." left us (${said}): nothing stored`,
      },
    };
  return {
    class: 'unknown',
    detail: { ...detail, reason: `the final "." left, no reply came: the message may have been stored (${said})` },
  };
}

/**
 * The reference a stored message names: its step's key (X-Effect-Ref). A message from before that header
 * carries only X-Effect-Id, and only a main step's first revision was sent then, whose key is the effect ID.
 */
function referenceOf(headers: Record<string, string[]>): string | undefined {
  return headers['X-Effect-Ref']?.[0] ?? headers['X-Effect-Id']?.[0];
}

export function emailSmtp(settings: EmailSettings): DestinationAdapter {
  const api = `${settings.mailboxUrl.replace(/\/+$/, '')}/api/v1`;

  async function headersOf(id: string, request: ReadbackRequest) {
    const found = await getJson<Record<string, string[]>>(`${api}/message/${encodeURIComponent(id)}/headers`, request);
    return found.status === 200 ? found.body : undefined;
  }

  /** Every stored message whose Message-ID is exactly ours (the search matches substrings). */
  async function exactHits(messageId: string, request: ReadbackRequest) {
    const query = encodeURIComponent(`message-id:"${messageId}"`);
    const found = await getJson<{ messages: MailpitSummary[]; messages_count: number }>(
      `${api}/search?query=${query}&limit=200`,
      request,
    );
    if (found.status === 404) throw new Error('Mailpit search is missing');
    const hits = found.body.messages.filter((m) => m.MessageID === messageId);
    const checked = await Promise.all(
      hits.map(async (m) => {
        const h = await headersOf(m.ID, request);
        // request.effectId is the step's reference (its released key), not the plain effect ID.
        const ours =
          h !== undefined &&
          referenceOf(h) === request.effectId &&
          h['X-Effect-Body-Sha256']?.[0] === request.bodySha256;
        return { ...m, ours };
      }),
    );
    return { checked, scanned: found.body.messages.length, complete: found.body.messages_count <= 200 };
  }

  /** Whether Mailpit still holds every message since `since`: nothing pruned, or the oldest is older. */
  async function coversSince(since: string, request: ReadbackRequest): Promise<boolean> {
    const newest = await getJson<{ total: number }>(`${api}/messages?limit=1`, request);
    if (newest.status === 404) throw new Error('Mailpit listing is missing');
    const { total } = newest.body;
    if (settings.mailboxMaxMessages === 0 || total < settings.mailboxMaxMessages) return true;
    const oldest = await getJson<{ messages: MailpitSummary[] }>(`${api}/messages?limit=1&start=${total - 1}`, request);
    const created = oldest.status === 200 ? oldest.body.messages[0]?.Created : undefined;
    return created !== undefined && Date.parse(created) < Date.parse(since) - SKEW_MS;
  }

  const urlOf = (id: string) => `${settings.mailboxUrl.replace(/\/+$/, '')}/view/${id}`;

  return {
    ...emailSmtpContract,
    async send({ effectId, idempotencyKey, package: pkg, timeoutMs }): Promise<SendOutcome> {
      const messageId = messageIdFor(idempotencyKey);
      // One connection per message (no pool), ours, with its own deadline: a session never outlives the call.
      const session = openSmtpSession(settings.smtpHost, settings.smtpPort, timeoutMs);
      const transport = nodemailer.createTransport({
        host: settings.smtpHost,
        port: settings.smtpPort,
        secure: false,
        ignoreTLS: true,
        name: 'effect-ledger',
        getSocket: session.getSocket,
        greetingTimeout: timeoutMs,
        socketTimeout: timeoutMs + 1000,
      });
      const sending = transport.sendMail({
        from: settings.from,
        to: String(pkg.body.to),
        subject: String(pkg.body.subject),
        text: String(pkg.body.text),
        messageId: `<${messageId}>`,
        headers: {
          'X-Effect-Id': effectId,
          // The step's reference (`effectID~step`, `#r<n>` in a revision): readback and the audit match it.
          'X-Effect-Ref': String(pkg.body.effect_id ?? idempotencyKey),
          'X-Effect-Body-Sha256': sha256Hex(canonicalJson(pkg.body)),
        },
      });
      sending.catch(() => {});
      try {
        const info = await smtpSpan(settings.smtpHost, settings.smtpPort, () =>
          Promise.race([sending, session.deadline]),
        );
        return {
          class: 'confirmed',
          httpStatus: 250,
          externalId: messageId,
          occurredAt: new Date().toISOString(),
          detail: { reason: 'accepted by the SMTP server', body: { response: info.response } },
        };
      } catch (error) {
        return classifySmtpError(error, session);
      } finally {
        transport.close();
        session.close();
      }
    },

    async readBack(request): Promise<ReadbackResult> {
      const method = 'message_id_search';
      const messageId = messageIdFor(request.idempotencyKey);
      const { checked, scanned, complete } = await exactHits(messageId, request);
      const [first, ...others] = checked.filter((m) => m.ours).sort((a, b) => a.Created.localeCompare(b.Created));
      if (first)
        return {
          outcome: 'found',
          coverage: complete ? 'complete' : 'partial',
          externalId: messageId,
          externalUrl: urlOf(first.ID),
          occurredAt: first.Created,
          detail: {
            method,
            reason: 'a stored message carries our Message-ID, effect ID and body hash',
            scanned,
            duplicates: others.map((m) => m.ID),
          },
        };
      const foreign = checked.filter((m) => !m.ours).map((m) => m.ID);
      if (foreign.length) return foreignBodyVerdict(method, foreign, scanned);
      if (complete && (await coversSince(request.since, request)))
        return {
          outcome: 'absent',
          coverage: 'complete',
          detail: {
            method,
            reason: 'no stored message carries our Message-ID, and nothing was pruned since the attempt',
            scanned,
          },
        };
      return {
        outcome: 'inconclusive',
        coverage: 'partial',
        detail: { method, reason: 'not found, but the mailbox pruned messages as recent as the attempt', scanned },
      };
    },

    resolveUrl: () => null,
    objectUrlShape: 'none (confirm with the Message-ID)',

    async lookup(externalId, request): Promise<LookupResult> {
      const { checked } = await exactHits(externalId, request);
      const [first] = checked;
      if (!first) return { exists: false };
      return {
        exists: true,
        externalId,
        externalUrl: urlOf(first.ID),
        occurredAt: first.Created,
        matchesRelease: externalId === messageIdFor(request.idempotencyKey) && first.ours,
      };
    },
  };
}
