// One SMTP connection the email adapter owns (nodemailer's `getSocket`), for two things nodemailer cannot
// give: a deadline over the whole session — its timeouts each bound one phase or one idle period, so a relay
// answering every command within them (tarpitting, a content filter at end of DATA) kept a send alive past
// the call timeout, and it stored the message after readback had said absent — and the one fact that
// decides a cut session's class: whether the message's final "." left us. A server stores a message only
// once it has read that line (RFC 5321 4.1.1.4; Mailpit discards a DATA cut short); dot-stuffing makes
// "\r\n.\r\n" appear nowhere else in what a client writes.
import { connect, type Socket } from 'node:net';

export class SessionDeadline extends Error {
  override readonly name = 'SessionDeadline';
  constructor(readonly timeoutMs: number) {
    super(`the SMTP session did not finish within the call timeout (${timeoutMs} ms)`);
  }
}

const END_OF_DATA = '\r\n.\r\n';

export interface SmtpSession {
  /** nodemailer's `getSocket` option: a connected socket of ours, or the connect error. */
  getSocket(options: unknown, callback: (error: Error | null, socketOptions?: { connection: Socket }) => void): void;
  /** Rejects with SessionDeadline once the call timeout has passed (the socket is destroyed first). */
  readonly deadline: Promise<never>;
  /** The TCP connection to the server was made. */
  readonly connected: boolean;
  /** The message's end-of-data line was handed to the socket: from then on the server may have stored it. */
  readonly endOfDataWritten: boolean;
  close(): void;
}

export function openSmtpSession(host: string, port: number, timeoutMs: number): SmtpSession {
  let socket: Socket | undefined;
  let connected = false;
  let endOfDataWritten = false;
  let expire: (error: Error) => void = () => {};
  const deadline = new Promise<never>((_, reject) => {
    expire = reject;
  });
  deadline.catch(() => {});
  // Nothing of ours leaves after the deadline: the socket goes (bytes already written may still arrive: the
  // destination's absence grace covers them).
  const timer = setTimeout(() => {
    socket?.destroy();
    expire(new SessionDeadline(timeoutMs));
  }, timeoutMs);
  return {
    getSocket(_options, callback) {
      const s = connect({ host, port });
      socket = s;
      let tail = '';
      const write = s.write.bind(s) as (...args: unknown[]) => boolean;
      s.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
        const text = tail + (typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('latin1'));
        if (text.includes(END_OF_DATA)) endOfDataWritten = true;
        tail = text.slice(-(END_OF_DATA.length - 1));
        return write(chunk, ...rest);
      }) as Socket['write'];
      s.once('connect', () => {
        connected = true;
        callback(null, { connection: s });
      });
      s.once('error', (error) => {
        if (!connected) callback(error);
      });
    },
    deadline,
    get connected() {
      return connected;
    },
    get endOfDataWritten() {
      return endOfDataWritten;
    },
    close() {
      clearTimeout(timer);
      socket?.destroy();
    },
  };
}
