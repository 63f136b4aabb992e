// The real destinations of one test file behind Toxiproxy: a Mailpit, a JetStream stream of its own on
// the machine's NATS (or one we start), and a fresh orders database; each reached by the worker only
// through its proxy, so a test can refuse, delay, cut or swallow what crosses the network.
import { randomBytes } from 'node:crypto';
import { createConnection } from 'node:net';
import { jetstreamManager } from '@nats-io/jetstream';
import type { Proxy as ToxicProxy } from 'toxiproxy-node-client';
import type { DestinationSettings } from '../../activities/destinations/registry.js';
import { MAILPIT_MAX_MESSAGES, type MailpitServer, startMailpit } from '../../harness/mailpit.js';
import { type NatsServer, startNats } from '../../harness/nats.js';
import { createOrdersDatabase, type OrdersDatabase } from '../../stack/orders-db.js';
import { startToxiproxy, type ToxiproxyServer } from '../../stack/toxiproxy.js';

export const EMAIL_FROM = 'billing@example.com';

export interface RealDestinations {
  toxiproxy: ToxiproxyServer;
  mailpit: MailpitServer;
  nats: NatsServer;
  stream: string;
  subjectPrefix: string;
  /** The stream's shortened duplicate window. */
  duplicateWindowMs: number;
  orders: OrdersDatabase;
  proxies: { smtp: ToxicProxy; nats: ToxicProxy; orders: ToxicProxy };
  /** What a worker needs to reach them, through the proxies. */
  settings: Omit<DestinationSettings, 'providerUrl'>;
  /** Every toxic removed and every proxy enabled again. */
  heal(): Promise<void>;
  stop(): Promise<void>;
}

export async function startRealDestinations(duplicateWindowMs = 1000): Promise<RealDestinations> {
  const [toxiproxy, mailpit, nats, orders] = await Promise.all([
    startToxiproxy(),
    startMailpit(),
    startNats(),
    createOrdersDatabase(),
  ]);
  const tag = randomBytes(4).toString('hex');
  const stream = `EFFECTS_${tag}`;
  const subjectPrefix = `effects_${tag}`;
  const jsm = await jetstreamManager(nats.connection);
  await jsm.streams.add({
    name: stream,
    subjects: [`${subjectPrefix}.>`],
    duplicate_window: duplicateWindowMs * 1_000_000,
  });
  const ordersUpstream = new URL(orders.url);
  const [smtp, natsProxy, ordersProxy] = await Promise.all([
    toxiproxy.proxy(`smtp_${tag}`, `127.0.0.1:${mailpit.smtpPort}`),
    toxiproxy.proxy(`nats_${tag}`, nats.address),
    toxiproxy.proxy(`orders_${tag}`, `${ordersUpstream.hostname}:${ordersUpstream.port || 5432}`),
  ]);
  const ordersViaProxy = new URL(orders.url);
  ordersViaProxy.port = String(ordersProxy.port);
  const proxies = { smtp: smtp.proxy, nats: natsProxy.proxy, orders: ordersProxy.proxy };
  return {
    toxiproxy,
    mailpit,
    nats,
    stream,
    subjectPrefix,
    duplicateWindowMs,
    orders,
    proxies,
    settings: {
      email: {
        smtpHost: '127.0.0.1',
        smtpPort: smtp.port,
        mailboxUrl: mailpit.url,
        from: EMAIL_FROM,
        mailboxMaxMessages: MAILPIT_MAX_MESSAGES,
      },
      jetstream: { servers: `127.0.0.1:${natsProxy.port}`, stream, subjectPrefix },
      ordersDatabaseUrl: ordersViaProxy.toString(),
    },
    async heal() {
      await toxiproxy.client.reset();
    },
    async stop() {
      await jsm.streams.delete(stream).catch(() => {});
      await Promise.allSettled([toxiproxy.stop(), mailpit.stop(), nats.stop(), orders.drop()]);
    },
  };
}

/** Switches a proxy off (its listener closed: connections refused) or on again. */
export async function setEnabled(proxy: ToxicProxy, enabled: boolean): Promise<void> {
  await proxy.update({ listen: proxy.listen, upstream: proxy.upstream, enabled });
}

/**
 * How many bytes an SMTP server sends before its reply to the message's final "." (greeting, EHLO,
 * MAIL, RCPT, DATA), measured over a session of our own that ends before any message: a proxy that
 * passes exactly one byte more delivers the message and loses the reply.
 */
export function smtpBytesBeforeQueued(port: number, from: string, to: string): Promise<number> {
  const commands = ['EHLO effect-ledger', `MAIL FROM:<${from}>`, `RCPT TO:<${to}>`, 'DATA'];
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    let received = '';
    let bytes = 0;
    socket.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      received += chunk.toString('latin1');
      // A reply is complete at a line "NNN text" (a hyphen after the code continues it).
      const lines = received.split('\r\n');
      received = lines.pop() ?? '';
      for (const line of lines) {
        if (!/^\d{3} /.test(line)) continue;
        const next = commands.shift();
        if (next === undefined) {
          socket.destroy();
          resolve(bytes);
          return;
        }
        socket.write(`${next}\r\n`);
      }
    });
    socket.once('error', reject);
  });
}
