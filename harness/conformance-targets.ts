// The built-in destinations as a destinations module for the kit (docs/conformance.md): its default export is
// the package's built-in destinations, as EFFECT_LEDGER_DESTINATIONS loads them; `conformance` names, per
// destination, a target that starts its own real server (the provider simulator, Mailpit, a JetStream stream,
// an orders database), gives the worker environment in which the destination's own connect() points at the
// kit's proxy, and counts objects by reference on the server itself. `npm run conformance --
// harness/conformance-targets.ts [name]` runs them. The planted adapters' module (test/planted/) reuses the
// targets on the same servers.
import { randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { builtInDestinations } from '../activities/destinations/built-in.js';
import { messageIdFor } from '../activities/destinations/email-smtp.js';
import { keyedApiSpec } from '../activities/destinations/keyed-api.js';
import { subjectFor } from '../activities/destinations/nats-jetstream.js';
import { socialFeedSpec } from '../activities/destinations/social-feed.js';
import type { ConformanceTarget, ConformanceTargets } from '../conformance/target.js';
import { createOrdersDatabase } from '../stack/orders-db.js';
import { MAILPIT_MAX_MESSAGES, startMailpit } from './mailpit.js';
import { startNats } from './nats.js';
import { startSimulator } from './simulator/client.js';

const hostOf = (url: string) => new URL(url).host;

/** The simulator's API, for keyed-api and for the planted adapters built on it. */
export function keyedApiTarget(): ConformanceTarget {
  return {
    async start() {
      const simulator = await startSimulator();
      return {
        upstream: hostOf(simulator.url),
        env: (address) => ({ EFFECT_LEDGER_PROVIDER_URL: `http://${address}` }),
        count: async (reference) =>
          (await simulator.objects()).filter((o) => o.metadata.effect_id === reference).length,
        sample: { operation: 'refund.create', payload: { charge: 'ch_kit', amount: 4000, currency: 'EUR' } },
        // The provider answers 400 to an amount that is not positive: a real refusal for the revision cells.
        refusedPayload: { charge: 'ch_kit', amount: -4000, currency: 'EUR' },
        failAfterCommit: (reference) => simulator.fault('status_500_after_commit', { reference }),
        // Its shape as declared: the kit's proxy faults its times, search and key from it.
        declaration: keyedApiSpec,
        stop: () => simulator.stop(),
      };
    },
  };
}

export function socialFeedTarget(): ConformanceTarget {
  return {
    async start() {
      const simulator = await startSimulator();
      return {
        upstream: hostOf(simulator.url),
        env: (address) => ({ EFFECT_LEDGER_PROVIDER_URL: `http://${address}` }),
        count: async (reference) =>
          (await simulator.socialPosts()).filter((p) => p.metadata?.effect_id === reference).length,
        sample: { operation: 'post.publish', payload: { channel: 'conformance', text: 'One post per effect.' } },
        failAfterCommit: (reference) => simulator.fault('status_500_after_commit', { reference }),
        declaration: socialFeedSpec,
        stop: () => simulator.stop(),
      };
    },
  };
}

/** A Mailpit, for email-smtp and the planted email adapter: SMTP through the proxy, its API read directly. */
export function emailTarget(): ConformanceTarget {
  return {
    async start() {
      const mailpit = await startMailpit();
      return {
        upstream: `127.0.0.1:${mailpit.smtpPort}`,
        env: (address) => ({
          EFFECT_LEDGER_SMTP_URL: `smtp://${address}`,
          EFFECT_LEDGER_MAILPIT_URL: mailpit.url,
          EFFECT_LEDGER_EMAIL_FROM: 'conformance@example.com',
          EFFECT_LEDGER_MAILPIT_MAX_MESSAGES: String(MAILPIT_MAX_MESSAGES),
        }),
        count: async (reference) => (await mailpit.messagesWithId(messageIdFor(reference))).length,
        sample: {
          operation: 'email.send',
          payload: { to: 'ana@example.com', subject: 'Your invoice', text: 'One email per effect.' },
        },
        stop: () => mailpit.stop(),
      };
    },
  };
}

/** Messages above this many bytes are refused by the stream: the revision cells' refusal. */
const MAX_MESSAGE_BYTES = 4096;

export function natsTarget(): ConformanceTarget {
  return {
    async start() {
      const nats = await startNats();
      const tag = randomBytes(4).toString('hex');
      const stream = `CONFORMANCE_${tag}`;
      const subjectPrefix = `conformance_${tag}`;
      const jsm = await jetstreamManager(nats.connection);
      await jsm.streams.add({ name: stream, subjects: [`${subjectPrefix}.>`], max_msg_size: MAX_MESSAGE_BYTES });
      return {
        upstream: nats.address,
        env: (address) => ({
          EFFECT_LEDGER_NATS_URL: address,
          EFFECT_LEDGER_NATS_STREAM: stream,
          EFFECT_LEDGER_NATS_SUBJECT_PREFIX: subjectPrefix,
        }),
        async count(reference) {
          const subject = subjectFor(subjectPrefix, reference);
          const info = await jsm.streams.info(stream, { subjects_filter: subject });
          return info.state.subjects?.[subject] ?? 0;
        },
        sample: { operation: 'event.publish', payload: { type: 'invoice.sent', data: { invoice: 'INV-1' } } },
        refusedPayload: {
          type: 'invoice.sent',
          data: { invoice: 'INV-1', attachment: 'x'.repeat(2 * MAX_MESSAGE_BYTES) },
        },
        async stop() {
          await jsm.streams.delete(stream).catch(() => {});
          await nats.stop();
        },
      };
    },
  };
}

export function ordersTarget(): ConformanceTarget {
  return {
    async start() {
      const orders = await createOrdersDatabase();
      return {
        upstream: hostOf(orders.url),
        env: (address) => {
          const url = new URL(orders.url);
          url.host = address;
          return { EFFECT_LEDGER_ORDERS_DATABASE_URL: url.toString() };
        },
        count: async (reference) => (await orders.orders()).filter((o) => o.effect_key === reference).length,
        sample: {
          operation: 'order.create',
          payload: { customer: 'cus_kit', sku: 'SKU-1', quantity: 2, amountCents: 4000 },
        },
        stop: () => orders.drop(),
      };
    },
  };
}

export default builtInDestinations;

export const conformance: ConformanceTargets = {
  'keyed-api': keyedApiTarget(),
  'social-feed': socialFeedTarget(),
  'email-smtp': emailTarget(),
  'nats-jetstream': natsTarget(),
  'orders-sql': ordersTarget(),
};
