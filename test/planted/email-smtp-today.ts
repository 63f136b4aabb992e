// PLANTED, test-only: the email-smtp adapter exactly as it was before the conformance kit found its two paths
// to a second email (issue 18), kept so the proof that the kit bites survives the fix (test/conformance.test.ts):
//   1. readback and lookup compare X-Effect-Id (the plain effect ID) with the step's reference, so a further
//      step's (`E~email`) or a revision's (`E#r2`) message is never "ours";
//   2. nothing bounds the whole SMTP session: a relay answering each command within its idle timeouts keeps
//      the send alive past the call timeout, and it stores the message after readback said absent.
// Only the imports differ from the original. Never used outside the tests.
// email-smtp: email over SMTP into a Mailpit mailbox. Mechanism: natural key. SMTP honours no
// idempotency key and nothing here drops a second copy (Mailpit's duplicate-ID dropping stays off), so
// the adapter gives every message a Message-ID derived from our key, and stamps the effect ID and the
// released body's hash in headers. Readback searches Mailpit's API for that Message-ID; its search
// matches substrings, so each hit is compared exactly. Mailpit prunes its oldest messages past its
// `--max`: absence counts only while nothing was pruned or the oldest message predates the attempt.
import nodemailer from 'nodemailer';
import { z } from 'zod';
import { foreignBodyVerdict } from '../../activities/destinations/exact-match.js';
import { getJson } from '../../activities/destinations/http-read.js';
import type {
  DestinationAdapter,
  DestinationContract,
  LookupResult,
  ReadbackRequest,
  ReadbackResult,
  SendOutcome,
} from '../../domain/destination-contract.js';
import { canonicalJson, sha256Hex } from '../../ledger/fingerprint.js';

const email = z
  .object({
    to: z.email().max(254),
    subject: z.string().min(1).max(200),
    text: z.string().min(1).max(10_000),
  })
  .strict();

export const emailSmtpContract: DestinationContract = {
  name: 'email-smtp',
  mechanism: 'natural_key',
  // Nothing at the destination remembers the Message-ID: no retention to declare.
  keyRetentionSeconds: null,
  // A Message-ID per revision: readback tells a revised email from the refused one's.
  keyScope: 'revision',
  operations: { 'email.send': email },
  callTimeoutMs: 10_000,
  // The mailbox is searched in full (while nothing was pruned), and an SMTP transaction cut before its
  // final reply stores nothing: once the in-flight window passed, absence is real.
  retryAfterProvenAbsence: true,
  // Mailpit stores a message before it answers the final "."; a few seconds cover a slow write.
  absenceGraceMs: 5_000,
  readbackMaxIntervalMs: 60 * 60 * 1000,
  buildPackage(effectId, _operation, payload) {
    return { target: `SMTP to ${String(payload.to)}`, body: { ...payload, effect_id: effectId } };
  },
  describe(_operation, payload) {
    return `email "${String(payload.subject)}" to ${String(payload.to)}`;
  },
};

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

const SKEW_MS = 5_000;

interface MailpitSummary {
  ID: string;
  MessageID: string;
  Created: string;
}

// nodemailer labels a connection closed after the message's final "." with command CONN too, so only the
// socket's own connect failure (or no greeting) proves that nothing of ours left.
function classifySmtpError(error: unknown): SendOutcome {
  const { code, command, responseCode, message, syscall } = error as {
    code?: string;
    command?: string;
    responseCode?: number;
    message?: string;
    syscall?: string;
  };
  const detail = { reason: `${command ?? '?'}: ${message ?? String(error)}`, errorCode: code };
  const neverConnected = syscall === 'connect' || /^connect E[A-Z]+/.test(message ?? '');
  if (neverConnected || /Greeting never received/.test(message ?? ''))
    return { class: 'not_sent', detail: { ...detail, reason: `no SMTP session (${detail.reason})` } };
  // A 5xx reply at any command: the server refused the message and stored nothing.
  if (responseCode !== undefined && responseCode >= 500) return { class: 'rejected', httpStatus: responseCode, detail };
  // A 4xx reply: transiently refused, not stored (RFC 5321 4.2.1).
  if (responseCode !== undefined && responseCode >= 400) return { class: 'not_sent', httpStatus: responseCode, detail };
  return { class: 'unknown', detail: { ...detail, reason: `the message may have been stored (${detail.reason})` } };
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
        const ours =
          h?.['X-Effect-Id']?.[0] === request.effectId && h['X-Effect-Body-Sha256']?.[0] === request.bodySha256;
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
      // One connection per message (no pool): a session that timed out is never reused.
      const transport = nodemailer.createTransport({
        host: settings.smtpHost,
        port: settings.smtpPort,
        secure: false,
        ignoreTLS: true,
        name: 'effect-ledger',
        connectionTimeout: timeoutMs,
        greetingTimeout: timeoutMs,
        // Longer than the greeting's own timer: with both equal the socket's idle timeout fired first when no
        // greeting came, and its error ("Timeout", CONN) cannot prove that nothing was sent — the greeting's can.
        socketTimeout: timeoutMs + 1000,
      });
      try {
        const info = await transport.sendMail({
          from: settings.from,
          to: String(pkg.body.to),
          subject: String(pkg.body.subject),
          text: String(pkg.body.text),
          messageId: `<${messageId}>`,
          headers: {
            'X-Effect-Id': effectId,
            // The step's reference (`effectID~step` for a further step): the audit pairs the message with its step.
            'X-Effect-Ref': String(pkg.body.effect_id ?? effectId),
            'X-Effect-Body-Sha256': sha256Hex(canonicalJson(pkg.body)),
          },
        });
        return {
          class: 'confirmed',
          httpStatus: 250,
          externalId: messageId,
          occurredAt: new Date().toISOString(),
          detail: { reason: 'accepted by the SMTP server', body: { response: info.response } },
        };
      } catch (error) {
        return classifySmtpError(error);
      } finally {
        transport.close();
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
