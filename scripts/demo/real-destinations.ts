// The demo's real destinations, beside the simulator's: a Mailpit (its web UI shows the invoices), a
// JetStream stream of the run's own on the machine's NATS (or a nats-server we start), and an orders
// database. The orders database stays between runs, as the ledger does: a fact names its order by ID, and
// a table made anew would number from 1 again. Streams are per run (a fact names stream and sequence),
// deleted at the end; a killed run's stream is deleted by the next run.
import { jetstreamManager } from '@nats-io/jetstream';
import type { DestinationSettings } from '../../activities/destinations/registry.js';
import { preferredPort } from '../../harness/free-port.js';
import { MAILPIT_MAX_MESSAGES, type MailpitServer, startMailpit } from '../../harness/mailpit.js';
import { type NatsServer, startNats } from '../../harness/nats.js';
import { createOrdersDatabase, type OrdersDatabase } from '../../harness/orders-db.js';

const STREAM_PREFIX = 'EFFECT_LEDGER_DEMO_';
const ORDERS_DATABASE = 'effect_ledger_demo_orders';

export interface DemoDestinations {
  mailpit: MailpitServer;
  nats: NatsServer;
  stream: string;
  orders: OrdersDatabase;
  settings: Omit<DestinationSettings, 'providerUrl'>;
  /** What each real destination holds now, a line each (what a user would look at). */
  describe(): Promise<string[]>;
  stop(): Promise<void>;
}

/** `tag`: this run's, in its stream's name and subjects. */
export async function startDemoDestinations(tag: string): Promise<DemoDestinations> {
  const run = tag.replace(/[^A-Za-z0-9]/g, '_');
  const stream = `${STREAM_PREFIX}${run}`;
  const subjectPrefix = `effect_ledger_demo_${run}`;
  const [smtpPort, httpPort] = await Promise.all([preferredPort(1025), preferredPort(8025)]);
  const [mailpit, nats, orders] = await Promise.all([
    startMailpit({ smtpPort, httpPort }),
    startNats(),
    createOrdersDatabase(ORDERS_DATABASE),
  ]);
  const jsm = await jetstreamManager(nats.connection);
  for await (const name of jsm.streams.names())
    if (name.startsWith(STREAM_PREFIX)) await jsm.streams.delete(name).catch(() => false);
  await jsm.streams.add({ name: stream, subjects: [`${subjectPrefix}.>`] });
  return {
    mailpit,
    nats,
    stream,
    orders,
    settings: {
      email: {
        smtpHost: '127.0.0.1',
        smtpPort: mailpit.smtpPort,
        mailboxUrl: mailpit.url,
        from: 'billing@example.com',
        mailboxMaxMessages: MAILPIT_MAX_MESSAGES,
      },
      jetstream: { servers: nats.address, stream, subjectPrefix },
      ordersDatabaseUrl: orders.url,
    },
    async describe() {
      const inbox = (await (await fetch(`${mailpit.url}/api/v1/messages?limit=20`)).json()) as {
        messages: Array<{ Subject: string; MessageID: string; To: Array<{ Address: string }> }>;
      };
      const info = await jsm.streams.info(stream, { subjects_filter: '>' });
      const rows = await orders.orders();
      const ours = rows.filter((r) => r.effect_key.startsWith(`${tag}.`));
      return [
        `Mailpit (${mailpit.url}): ${inbox.messages.length} message(s)`,
        ...inbox.messages.map((m) => `  "${m.Subject}" to ${m.To.map((t) => t.Address).join(', ')} <${m.MessageID}>`),
        `JetStream stream ${stream} on ${nats.address}${nats.ours ? ' (started for the demo)' : ''}: ${info.state.messages} message(s)`,
        ...Object.keys(info.state.subjects ?? {}).map((subject) => `  on ${subject}`),
        `orders table (database ${ORDERS_DATABASE}, kept between runs): ${rows.length} row(s), ${ours.length} from this run`,
        ...ours.map((r) => `  order ${r.order_id} key=${r.effect_key}`),
      ];
    },
    async stop() {
      await jsm.streams.delete(stream).catch(() => false);
      await Promise.allSettled([mailpit.stop(), nats.stop(), orders.close()]);
    },
  };
}
