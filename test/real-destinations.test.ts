// The three real destinations (email over SMTP to Mailpit, NATS JetStream, an orders table in another
// PostgreSQL database), each behind Toxiproxy, under a real dev server, ledger and worker. Each test
// asserts what a user would check: the objects at the destination (exactly one), the ledger's trail and
// the workflow's stage. Faults happen at the network boundary; the test removes them, not a clock.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DiscardPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import nodemailer from 'nodemailer';
import { messageIdFor } from '../activities/destinations/email-smtp.js';
import { subjectFor } from '../activities/destinations/nats-jetstream.js';
import { resultOf, waitForStage } from '../harness/effect-probes.js';
import { type Stack, startStack } from '../harness/local-stack.js';
import { readTrail } from '../ledger/trail.js';
import { audit } from '../scripts/audit/audit.js';
import { realDestinationRecords } from '../scripts/audit/destination-records.js';
import { waitFor } from '../stack/wait-for.js';
import { isolateEachTest, TEST_TIMEOUT } from './support/isolation.js';
import {
  EMAIL_FROM,
  type RealDestinations,
  setEnabled,
  smtpBytesBeforeQueued,
  startRealDestinations,
} from './support/real-destinations.js';

let stack: Stack | undefined;
let real: RealDestinations;
isolateEachTest(() => stack);

before(async () => {
  [stack, real] = await Promise.all([startStack({ purpose: 'real' }), startRealDestinations()]);
});
after(async () => {
  await Promise.allSettled([stack?.stop(), real?.stop()]);
});

const s = () => stack as Stack;
const withWorker = <T>(fn: () => Promise<T>) => s().withWorker(fn, { destinations: real.settings });

/** The path the ledger recorded: each answer and readback in order, then the stage. */
async function ledgerPath(effectId: string) {
  const trail = await readTrail(s().ledger.db, effectId);
  assert.ok(trail, `${effectId} is in the ledger`);
  const steps = trail.evidence.map((e) => (e.kind === 'readback' ? `readback ${e.outcome}` : e.outcome));
  return { trail, path: ['attempted', ...steps, trail.effect.stage].join(' → ') };
}

async function attemptOutcome(effectId: string, n: number) {
  return waitFor(async () => {
    const trail = await readTrail(s().ledger.db, effectId);
    return trail?.evidence.filter((e) => e.kind !== 'readback')[n - 1]?.outcome;
  }, `${effectId} attempt ${n} to have an outcome`);
}

const email = (effectId: string) => ({
  effectId,
  destination: 'email-smtp',
  operation: 'email.send',
  payload: { to: 'ana@example.com', subject: `Invoice ${effectId}`, text: 'Your invoice is attached.' },
  approvedBy: 'ana@example.com',
  authorizationRef: 'TICKET-11',
});
const event = (effectId: string) => ({
  effectId,
  destination: 'nats-jetstream',
  operation: 'event.publish',
  payload: { type: 'invoice.sent', data: { invoice: effectId } },
  approvedBy: 'ana@example.com',
  authorizationRef: 'TICKET-11',
});
const order = (effectId: string) => ({
  effectId,
  destination: 'orders-sql',
  operation: 'order.create',
  payload: { customer: 'cus_1', sku: 'SKU-9', quantity: 2, amountCents: 4000 },
  approvedBy: 'ana@example.com',
  authorizationRef: 'TICKET-11',
});

const emailsAt = async (effectId: string) => (await real.mailpit.messagesWithId(messageIdFor(effectId))).length;
async function eventsAt(effectId: string): Promise<number> {
  const jsm = await jetstreamManager(real.nats.connection);
  const subject = subjectFor(real.subjectPrefix, effectId);
  const info = await jsm.streams.info(real.stream, { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}
const ordersAt = async (effectId: string) =>
  (await real.orders.orders()).filter((o) => o.effect_key === effectId).length;

const scenarios: string[] = [];
after(() => {
  if (scenarios.length) console.log(`\nscenario | ledger path | objects at the destination\n${scenarios.join('\n')}`);
});
async function report(name: string, effectId: string, objects: number) {
  const { path } = await ledgerPath(effectId);
  scenarios.push(`${name} | ${path} | ${objects}`);
  return path;
}

async function happyAndDuplicate(request: { effectId: string }, count: (id: string) => Promise<number>) {
  await withWorker(async () => {
    await s().effects.approve(request);
    assert.equal((await resultOf(s(), request.effectId)).stage, 'recorded');
    // The same approval again: the ledger answers, nothing is sent.
    await s().effects.approve(request);
    assert.equal((await resultOf(s(), request.effectId)).stage, 'recorded');
  });
  const { trail } = await ledgerPath(request.effectId);
  assert.equal(trail.attempts.length, 1);
  assert.equal(trail.fact?.confirmedBy, 'provider_response');
  assert.equal(await count(request.effectId), 1);
}

/** Refused before sending: not sent, then the same key again once the proxy listens. */
async function refusedThenRetried(request: { effectId: string }, proxy: keyof RealDestinations['proxies']) {
  await setEnabled(real.proxies[proxy], false);
  try {
    await withWorker(async () => {
      await s().effects.approve(request);
      assert.equal(await attemptOutcome(request.effectId, 1), 'not_sent');
      await setEnabled(real.proxies[proxy], true);
      assert.equal((await resultOf(s(), request.effectId)).stage, 'recorded');
    });
  } finally {
    await real.heal();
  }
  const { trail } = await ledgerPath(request.effectId);
  assert.deepEqual(
    trail.attempts.map((a) => a.idempotencyKey),
    [request.effectId, request.effectId],
    'the retry carries the same key',
  );
}

describe('email over SMTP to Mailpit', () => {
  test('happy path, and a duplicate approval sends nothing', TEST_TIMEOUT, async () => {
    await happyAndDuplicate(email('mail:happy'), emailsAt);
    await report('email: happy + duplicate approval', 'mail:happy', await emailsAt('mail:happy'));
  });

  test(
    'the reply to "." is lost after Mailpit stored the message: unknown → readback finds it',
    TEST_TIMEOUT,
    async () => {
      const request = email('mail:lost-reply');
      const bytes = await smtpBytesBeforeQueued(real.mailpit.smtpPort, EMAIL_FROM, request.payload.to);
      await real.proxies.smtp.addToxic({
        name: 'lose-queued-reply',
        type: 'limit_data',
        stream: 'downstream',
        toxicity: 1,
        attributes: { bytes: bytes + 1 },
      });
      try {
        await withWorker(async () => {
          await s().effectsWith({ callTimeoutMs: 3000 }).approve(request);
          assert.equal((await resultOf(s(), request.effectId)).stage, 'recorded');
        });
      } finally {
        await real.heal();
      }
      assert.equal(await emailsAt(request.effectId), 1);
      const path = await report('email: reply lost', request.effectId, await emailsAt(request.effectId));
      assert.equal(path, 'attempted → unknown → readback found → recorded');
    },
  );

  test(
    'the connection is cut mid-message, after the final "." left: unknown → readback proves absence → same Message-ID again',
    TEST_TIMEOUT,
    async () => {
      const request = email('mail:cut');
      // What we send reaches the server 300 ms late, and only its first 300 bytes: the message and its final
      // "." have long left us when the cut (inside the message) comes back. Nothing was stored, but that we
      // cannot know: unknown.
      await real.proxies.smtp.addToxic({
        name: 'slow-upstream',
        type: 'latency',
        stream: 'upstream',
        toxicity: 1,
        attributes: { latency: 300, jitter: 0 },
      });
      await real.proxies.smtp.addToxic({
        name: 'cut-mid-message',
        type: 'limit_data',
        stream: 'upstream',
        toxicity: 1,
        attributes: { bytes: 300 },
      });
      await withWorker(async () => {
        await s().effectsWith({ callTimeoutMs: 3000 }).approve(request);
        assert.equal(await attemptOutcome(request.effectId, 1), 'unknown');
        await real.heal();
        assert.equal((await resultOf(s(), request.effectId)).stage, 'recorded');
      }).finally(() => real.heal());
      assert.equal(await emailsAt(request.effectId), 1);
      const path = await report('email: cut mid-stream', request.effectId, await emailsAt(request.effectId));
      assert.match(path, /^attempted → unknown → (readback (inconclusive|absent) → )+confirmed → recorded$/);
    },
  );

  test(
    'the connection is cut before the message\'s final "." left: not sent (nothing stored) → same Message-ID',
    TEST_TIMEOUT,
    async () => {
      const request = email('mail:cut-early');
      // 40 bytes: EHLO and part of MAIL FROM. Our client writes the message only after DATA's 354, so nothing
      // of it left, and a server stores no message it has not read to its end.
      await real.proxies.smtp.addToxic({
        name: 'cut-before-data',
        type: 'limit_data',
        stream: 'upstream',
        toxicity: 1,
        attributes: { bytes: 40 },
      });
      await withWorker(async () => {
        await s().effectsWith({ callTimeoutMs: 3000 }).approve(request);
        assert.equal(await attemptOutcome(request.effectId, 1), 'not_sent');
        await real.heal();
        assert.equal((await resultOf(s(), request.effectId)).stage, 'recorded');
      }).finally(() => real.heal());
      const { trail } = await ledgerPath(request.effectId);
      assert.match(
        JSON.stringify(trail.evidence[0]?.detail),
        /the session ended before the message's final \\".\\" left us/,
      );
      assert.equal(await emailsAt(request.effectId), 1);
      const path = await report('email: cut before "."', request.effectId, await emailsAt(request.effectId));
      assert.equal(path, 'attempted → not_sent → confirmed → recorded');
    },
  );

  test('latency past the call timeout before the greeting: not sent → same Message-ID', TEST_TIMEOUT, async () => {
    const request = email('mail:slow');
    // Every reply 4 s late: the greeting itself comes after the 1 s call timeout, so nothing of
    // ours went out, and the adapter knows it (no SMTP session): not sent, not unknown.
    await real.proxies.smtp.addToxic({
      name: 'slow-replies',
      type: 'latency',
      stream: 'downstream',
      toxicity: 1,
      attributes: { latency: 4000, jitter: 0 },
    });
    await withWorker(async () => {
      await s().effectsWith({ callTimeoutMs: 1000 }).approve(request);
      assert.equal(await attemptOutcome(request.effectId, 1), 'not_sent');
      await real.heal();
      assert.equal((await resultOf(s(), request.effectId)).stage, 'recorded');
    }).finally(() => real.heal());
    assert.equal(await emailsAt(request.effectId), 1);
    const path = await report('email: latency past timeout', request.effectId, await emailsAt(request.effectId));
    assert.equal(path, 'attempted → not_sent → confirmed → recorded');
  });

  test('SMTP refused before sending: not sent → same key → recorded', TEST_TIMEOUT, async () => {
    await refusedThenRetried(email('mail:refused'), 'smtp');
    assert.equal(await emailsAt('mail:refused'), 1);
    await report('email: refused before send', 'mail:refused', await emailsAt('mail:refused'));
  });
});

describe('NATS JetStream', () => {
  test('happy path, and a duplicate approval sends nothing', TEST_TIMEOUT, async () => {
    await happyAndDuplicate(event('evt:happy'), eventsAt);
    await report('jetstream: happy + duplicate approval', 'evt:happy', await eventsAt('evt:happy'));
  });

  test('latency past the call timeout: stored, ack late → unknown → readback finds it', TEST_TIMEOUT, async () => {
    await withWorker(async () => {
      // A first publish opens the adapter's connection; the latency then meets our publish on it.
      await s().effects.approve(event('evt:warm-1'));
      assert.equal((await resultOf(s(), 'evt:warm-1')).stage, 'recorded');
      await real.proxies.nats.addToxic({
        name: 'slow-acks',
        type: 'latency',
        stream: 'downstream',
        toxicity: 1,
        attributes: { latency: 4000, jitter: 0 },
      });
      await s().effectsWith({ callTimeoutMs: 1000 }).approve(event('evt:slow'));
      await waitForStage(s(), 'evt:slow', 'unknown');
      await real.heal();
      assert.equal((await resultOf(s(), 'evt:slow')).stage, 'recorded');
    }).finally(() => real.heal());
    assert.equal(await eventsAt('evt:slow'), 1);
    const path = await report('jetstream: latency past timeout', 'evt:slow', await eventsAt('evt:slow'));
    assert.equal(path, 'attempted → unknown → readback found → recorded');
  });

  test('ack lost and the duplicate window passes: the key is not trusted, readback decides', TEST_TIMEOUT, async () => {
    const effectId = 'evt:window';
    await withWorker(async () => {
      await s().effects.approve(event('evt:warm-2'));
      assert.equal((await resultOf(s(), 'evt:warm-2')).stage, 'recorded');
      await real.proxies.nats.addToxic({
        name: 'drop-acks',
        type: 'timeout',
        stream: 'downstream',
        toxicity: 1,
        attributes: { timeout: 0 },
      });
      await s().effectsWith({ callTimeoutMs: 1000 }).approve(event(effectId));
      assert.equal(await attemptOutcome(effectId, 1), 'unknown');
      const { trail } = await ledgerPath(effectId);
      const started = trail.attempts[0]?.startedAt.getTime() ?? 0;
      await waitFor(async () => Date.now() > started + real.duplicateWindowMs + 500, 'the duplicate window to pass');
      // The server proves it: our key is accepted again now, as a new message (on a probe subject).
      const js = (await import('@nats-io/jetstream')).jetstream(real.nats.connection);
      const probe = await js.publish(`${real.subjectPrefix}.probe`, 'probe', { msgID: effectId });
      assert.equal(probe.duplicate, false, 'past the window the key no longer dedupes');
      await real.heal();
      assert.equal((await resultOf(s(), effectId)).stage, 'recorded');
    }).finally(() => real.heal());
    assert.equal(await eventsAt(effectId), 1, 'one message on the effect subject: nothing was resent');
    const { trail } = await ledgerPath(effectId);
    assert.equal(trail.attempts.length, 1);
    const found = trail.evidence.find((e) => e.kind === 'readback' && e.outcome === 'found');
    assert.match(JSON.stringify(found?.detail), /no longer covers it/);
    const path = await report('jetstream: ack lost, window passed', effectId, await eventsAt(effectId));
    assert.match(path, /^attempted → unknown → (readback \w+ → )*readback found → recorded$/);
  });

  test(
    'the connection is reset as the ack comes back: stored → unknown → readback finds it',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'evt:cut';
      await withWorker(async () => {
        await s().effects.approve(event('evt:warm-3'));
        assert.equal((await resultOf(s(), 'evt:warm-3')).stage, 'recorded');
        // The next chunk the server sends (our publish's ack) is dropped and the connection reset.
        await real.proxies.nats.addToxic({
          name: 'reset-on-ack',
          type: 'reset_peer',
          stream: 'downstream',
          toxicity: 1,
          attributes: { timeout: 0 },
        });
        await s().effectsWith({ callTimeoutMs: 2000 }).approve(event(effectId));
        assert.equal(await attemptOutcome(effectId, 1), 'unknown');
        await real.heal();
        assert.equal((await resultOf(s(), effectId)).stage, 'recorded');
      }).finally(() => real.heal());
      assert.equal(await eventsAt(effectId), 1);
      const path = await report('jetstream: cut mid-stream', effectId, await eventsAt(effectId));
      assert.equal(path, 'attempted → unknown → readback found → recorded');
    },
  );

  test('NATS refused before sending: not sent → same key → recorded', TEST_TIMEOUT, async () => {
    await refusedThenRetried(event('evt:refused'), 'nats');
    assert.equal(await eventsAt('evt:refused'), 1);
    await report('jetstream: refused before send', 'evt:refused', await eventsAt('evt:refused'));
  });

  test(
    'the stream is full (JetStream API error 10077, status 503): not stored, so not sent; the same key again once there is room; one message',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'evt:full';
      const jsm = await jetstreamManager(real.nats.connection);
      // At least one message in the stream (max_msgs 0 would mean no limit), on a subject of its own.
      await jetstream(real.nats.connection).publish(`${real.subjectPrefix}.filler`, 'filler');
      const { config, state } = await jsm.streams.info(real.stream);
      // The stream takes no more messages (it refuses new ones rather than dropping old ones) until the test
      // gives it room again: a transient refusal by the cluster, not a refusal of our message.
      await jsm.streams.update(real.stream, { ...config, max_msgs: state.messages, discard: DiscardPolicy.New });
      try {
        await withWorker(async () => {
          await s().effects.approve(event(effectId));
          assert.equal(await attemptOutcome(effectId, 1), 'not_sent');
          await jsm.streams.update(real.stream, config);
          assert.equal((await resultOf(s(), effectId)).stage, 'recorded');
        });
      } finally {
        await jsm.streams.update(real.stream, config).catch(() => undefined);
      }
      assert.equal(await eventsAt(effectId), 1);
      const { trail } = await ledgerPath(effectId);
      assert.match(JSON.stringify(trail.evidence[0]?.detail), /10077/);
      const path = await report('jetstream: stream full', effectId, await eventsAt(effectId));
      assert.match(path, /^attempted → not_sent → (not_sent → )*confirmed → recorded$/);
    },
  );
});

describe('orders table in another PostgreSQL database', () => {
  test('happy path, and a duplicate approval sends nothing', TEST_TIMEOUT, async () => {
    await happyAndDuplicate(order('ord:happy'), ordersAt);
    await report('orders-sql: happy + duplicate approval', 'ord:happy', await ordersAt('ord:happy'));
  });

  /**
   * Our INSERT, fully at the server and waiting: a session of the test holds an uncommitted row with the same
   * key, so the statement waits on the unique index after its Bind, Execute and Sync arrived. (A table lock
   * would stop it earlier: parse analysis takes the table's lock, and postgres.js, on a fresh connection,
   * sends Parse/Describe/Sync first and the Bind/Execute only when the description comes back — swallow that
   * and the INSERT is never executed, which is what the first version of this test met.) `whileWaiting` puts
   * the fault on the link; the holder then rolls back, our INSERT commits and its answer meets the fault.
   */
  async function insertCommitsInto(effectId: string, callTimeoutMs: number, whileWaiting: () => Promise<void>) {
    const holder = real.orders.session();
    await holder.unsafe('BEGIN');
    await holder`INSERT INTO orders (effect_key, body, body_sha256) VALUES (${effectId}, '{}', ${'0'.repeat(64)})`;
    const watcher = real.orders.session();
    const adapterSession = () =>
      watcher<{ state: string; wait_event_type: string | null }[]>`SELECT state, wait_event_type FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = 'effect-ledger'`;
    try {
      await s().effectsWith({ callTimeoutMs }).approve(order(effectId));
      await waitFor(
        async () => (await adapterSession()).some((a) => a.wait_event_type === 'Lock'),
        'our INSERT to wait on the held key',
      );
      await whileWaiting();
    } finally {
      await holder.unsafe('ROLLBACK');
    }
    // Committed, and its answer (ReadyForQuery comes right after the backend reports idle) on the wire.
    await waitFor(
      async () => (await ordersAt(effectId)) === 1 && (await adapterSession()).every((a) => a.state === 'idle'),
      'our INSERT to commit and answer',
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    await Promise.all([holder.end(), watcher.end()]);
  }

  test('the INSERT commits and its answer is lost: unknown → SELECT finds it', TEST_TIMEOUT, async () => {
    const effectId = 'ord:lost-answer';
    await withWorker(async () => {
      await insertCommitsInto(effectId, 3000, () =>
        real.proxies.orders
          .addToxic({
            name: 'swallow-answer',
            type: 'timeout',
            stream: 'downstream',
            toxicity: 1,
            // 0: what the server sends is dropped (not held) until the toxic goes.
            attributes: { timeout: 0 },
          })
          .then(() => undefined),
      );
      // The answer is gone; the link heals before the call times out, so the readback that follows gets through.
      await real.heal();
      assert.equal(await attemptOutcome(effectId, 1), 'unknown');
      assert.equal((await resultOf(s(), effectId)).stage, 'recorded');
    }).finally(() => real.heal());
    assert.equal(await ordersAt(effectId), 1);
    const path = await report('orders-sql: answer lost', effectId, await ordersAt(effectId));
    assert.equal(path, 'attempted → unknown → readback found → recorded');
  });

  test('committed, its answer late past the call timeout: unknown → SELECT finds it', TEST_TIMEOUT, async () => {
    const effectId = 'ord:slow-answer';
    await withWorker(async () => {
      await insertCommitsInto(effectId, 2000, () =>
        real.proxies.orders
          .addToxic({
            name: 'slow-answer',
            type: 'latency',
            stream: 'downstream',
            toxicity: 1,
            attributes: { latency: 15_000, jitter: 0 },
          })
          .then(() => undefined),
      );
      assert.equal(await attemptOutcome(effectId, 1), 'unknown');
      await real.heal();
      assert.equal((await resultOf(s(), effectId)).stage, 'recorded');
    }).finally(() => real.heal());
    assert.equal(await ordersAt(effectId), 1);
    const path = await report('orders-sql: latency past timeout', effectId, await ordersAt(effectId));
    assert.equal(path, 'attempted → unknown → readback found → recorded');
  });

  test(
    'the connection is cut inside the INSERT: unknown → SELECT proves absence → same key → recorded',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'ord:cut';
      // The startup message (trust auth: nothing else goes up first) is under 150 bytes; the INSERT's Parse is
      // several hundred: the server gets half a message, and a half message is never executed.
      await real.proxies.orders.addToxic({
        name: 'cut-mid-insert',
        type: 'limit_data',
        stream: 'upstream',
        toxicity: 1,
        attributes: { bytes: 150 },
      });
      await withWorker(async () => {
        await s().effectsWith({ callTimeoutMs: 2000 }).approve(order(effectId));
        assert.equal(await attemptOutcome(effectId, 1), 'unknown');
        assert.equal(await ordersAt(effectId), 0);
        await real.heal();
        assert.equal((await resultOf(s(), effectId)).stage, 'recorded');
      }).finally(() => real.heal());
      assert.equal(await ordersAt(effectId), 1);
      const { trail } = await ledgerPath(effectId);
      assert.deepEqual(
        trail.attempts.map((a) => a.idempotencyKey),
        [effectId, effectId],
      );
      const path = await report('orders-sql: cut mid-stream', effectId, await ordersAt(effectId));
      // Inside the grace period an absence is inconclusive (a statement may still be waiting to commit).
      assert.match(path, /^attempted → unknown → (readback (inconclusive|absent) → )+confirmed → recorded$/);
    },
  );

  test('PostgreSQL refused before sending: not sent → same key → recorded', TEST_TIMEOUT, async () => {
    await refusedThenRetried(order('ord:refused'), 'orders');
    assert.equal(await ordersAt('ord:refused'), 1);
    await report('orders-sql: refused before send', 'ord:refused', await ordersAt('ord:refused'));
  });
});

describe('the real destinations in the model: a multi-step invoice, a revised order', () => {
  test('invoice.send: the order row, then the email — one of each, one fact per step', TEST_TIMEOUT, async () => {
    const effectId = 'inv:two-steps';
    await withWorker(async () => {
      await s().effects.approve({
        ...order(effectId),
        operation: 'invoice.send',
        payload: { ...order(effectId).payload, to: 'ana@example.com', subject: 'Invoice 7', text: 'Thank you.' },
      });
      assert.equal((await resultOf(s(), effectId)).stage, 'recorded');
    });
    assert.equal(await ordersAt(effectId), 1, 'one order row, under the effect ID');
    assert.equal(await emailsAt(`${effectId}~email`), 1, 'one email, its Message-ID from effectID~email');
    const { trail } = await ledgerPath(effectId);
    assert.deepEqual(trail.facts.map((f) => f.step).sort(), ['email', 'main']);
    assert.deepEqual(
      trail.attempts.map((a) => a.idempotencyKey),
      [effectId, `${effectId}~email`],
      'each step once, under its own key',
    );
    await report('invoice.send: orders-sql then email-smtp', effectId, (await ordersAt(effectId)) + 1);
  });

  test(
    'an order the database refuses is revised by a person: one row, with revision 2 body',
    TEST_TIMEOUT,
    async () => {
      const effectId = 'ord:revised';
      // The user's own rule, in their database: no order above 100 units.
      const session = real.orders.session();
      await session`ALTER TABLE orders ADD CONSTRAINT at_most_100 CHECK ((body->>'quantity')::int <= 100)`;
      try {
        const tooMany = { ...order(effectId), payload: { ...order(effectId).payload, quantity: 500 } };
        await withWorker(async () => {
          await s().effects.approve(tooMany);
          assert.equal((await resultOf(s(), effectId)).stage, 'rejected');
          const revised = await s().effects.revise(effectId, {
            payload: { ...tooMany.payload, quantity: 50 },
            approvedBy: 'ana@example.com',
            authorizationRef: 'TICKET-11',
            reason: 'split the order: 50 now',
          });
          assert.equal(revised.revision, 2);
          assert.equal((await resultOf(s(), effectId)).stage, 'recorded');
        });
      } finally {
        await session`ALTER TABLE orders DROP CONSTRAINT IF EXISTS at_most_100`;
        await session.end();
      }
      const rows = (await real.orders.orders()).filter((o) => o.effect_key === effectId);
      const { trail, path } = await ledgerPath(effectId);
      assert.equal(rows.length, 1, 'one order');
      const latest = trail.releases.filter((r) => r.revision === 2);
      assert.equal(latest.length, 1);
      assert.equal(rows[0]?.body_sha256, latest[0]?.bodySha256, "the row carries revision 2's body");
      assert.equal(trail.revisions.length, 1, 'the person’s revision is kept');
      scenarios.push(`orders-sql: refused (user's CHECK), revised | ${path} | ${rows.length}`);
    },
  );
});

describe("the audit reads each real destination's own records", () => {
  test(
    'no finding over every scenario above; a second object per destination is a duplicate',
    TEST_TIMEOUT,
    async () => {
      const records = () =>
        realDestinationRecords({
          email: { mailboxUrl: real.mailpit.url },
          jetstream: { servers: real.nats.address, stream: real.stream },
          ordersDatabaseUrl: real.orders.url,
        });
      const before = await audit(s().ledger.sql, { destinations: records() });
      assert.deepEqual(before.findings, [], 'every object has its fact, every fact its object');
      assert.ok(before.checked.objects >= 15, `objects read: ${before.checked.objects}`);
      // Someone else sends a copy of each (not through our adapters): the audit must see two objects.
      await nodemailer
        .createTransport({ host: '127.0.0.1', port: real.mailpit.smtpPort, secure: false, ignoreTLS: true })
        .sendMail({
          from: EMAIL_FROM,
          to: 'ana@example.com',
          subject: 'copy',
          text: 'copy',
          headers: { 'X-Effect-Id': 'mail:happy' },
        });
      const copyHeaders = natsHeaders();
      copyHeaders.set('Effect-Id', 'evt:happy');
      await jetstream(real.nats.connection).publish(subjectFor(real.subjectPrefix, 'evt:happy-copy'), 'copy', {
        msgID: 'evt:happy',
        headers: copyHeaders,
      });
      const orders = real.orders.session();
      await orders`INSERT INTO orders (effect_key, body, body_sha256)
      VALUES ('copy-of-ord:happy', ${orders.json({ effect_id: 'ord:happy' })}, ${'0'.repeat(64)})`;
      await orders.end();
      const after = await audit(s().ledger.sql, { destinations: records() });
      const duplicates = after.findings.filter((f) => f.kind === 'duplicate').map((f) => f.effectId);
      assert.deepEqual(duplicates.sort(), ['evt:happy', 'mail:happy', 'ord:happy']);
      // The order row's key is not derived from its effect ID (the key dedupes nothing here).
      assert.ok(after.findings.some((f) => f.kind === 'foreign_key' && f.effectId === 'ord:happy'));
    },
  );
});
