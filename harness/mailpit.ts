// A Mailpit on loopback for one test file: SMTP and its HTTP API on free ports, messages in memory only
// as long as it runs (a temporary database), Mailpit's duplicate-ID dropping left off so a second copy
// of a message would show. Found in bin/ (scripts/setup.sh builds it) or on PATH.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { projectRoot } from '../workers/config.js';
import { freePort } from './free-port.js';
import { startGuarded } from './guarded-server.js';
import { waitFor } from './wait-for.js';

export const MAILPIT_MAX_MESSAGES = 500;

export interface MailpitServer {
  smtpPort: number;
  /** The HTTP base URL of its API and web UI. */
  url: string;
  /** Summaries of every stored message whose Message-ID is exactly `messageId`. */
  messagesWithId(messageId: string): Promise<Array<{ ID: string; MessageID: string }>>;
  stop(): Promise<void>;
}

export function mailpitBinary(): string {
  const local = resolve(projectRoot, 'bin/mailpit');
  return process.env.MAILPIT_BIN ?? (existsSync(local) ? local : 'mailpit');
}

/** Free ports unless given (the demo prefers Mailpit's usual 1025 and 8025). */
export async function startMailpit(ports: { smtpPort?: number; httpPort?: number } = {}): Promise<MailpitServer> {
  const smtpPort = ports.smtpPort ?? (await freePort());
  const httpPort = ports.httpPort ?? (await freePort());
  const url = `http://127.0.0.1:${httpPort}`;
  const server = startGuarded(mailpitBinary(), [
    '--smtp',
    `127.0.0.1:${smtpPort}`,
    '--listen',
    `127.0.0.1:${httpPort}`,
    '--max',
    String(MAILPIT_MAX_MESSAGES),
    '--smtp-auth-accept-any',
    '--smtp-auth-allow-insecure',
    '--disable-version-check',
    '--quiet',
  ]);
  await waitFor(
    async () => {
      if (server.child.exitCode !== null)
        throw new Error(`mailpit (${mailpitBinary()}) exited: ${server.output() || 'no output'}`);
      return (await fetch(`${url}/api/v1/info`)).ok;
    },
    'Mailpit to answer',
    30_000,
  );
  return {
    smtpPort,
    url,
    async messagesWithId(messageId) {
      const query = encodeURIComponent(`message-id:"${messageId}"`);
      const found = (await (await fetch(`${url}/api/v1/search?query=${query}&limit=200`)).json()) as {
        messages: Array<{ ID: string; MessageID: string }>;
      };
      return found.messages.filter((m) => m.MessageID === messageId);
    },
    stop: () => server.stop(),
  };
}
