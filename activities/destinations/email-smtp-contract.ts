// email-smtp's contract: what the approving side needs to validate an email and fix its package. No
// nodemailer here: backend code imports this; the adapter (email-smtp.ts) connects it.
import { z } from 'zod';
import type { DestinationContract } from '../../domain/destination-contract.js';

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
  // The mailbox is searched in full (while nothing was pruned), and nothing of ours leaves after the call
  // timeout (the session's deadline closes the socket): once the in-flight window passed, absence is real.
  retryAfterProvenAbsence: true,
  // After the deadline, what we had written may still be travelling, and a server that read the final "."
  // may still be storing it (Mailpit stores before it answers; a relay may filter first): a few seconds.
  absenceGraceMs: 5_000,
  readbackMaxIntervalMs: 60 * 60 * 1000,
  buildPackage(effectId, _operation, payload) {
    return { target: `SMTP to ${String(payload.to)}`, body: { ...payload, effect_id: effectId } };
  },
  describe(_operation, payload) {
    return `email "${String(payload.subject)}" to ${String(payload.to)}`;
  },
};
