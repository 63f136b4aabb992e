// What the demo approves: the simulator's keyed API (a duplicate delivery, a look-alike, a conflict, a
// refusal among them) and the real destinations (an invoice: an order row, then its email; an event).
export interface DemoApproval {
  note: string;
  effectId: string;
  destination: string;
  operation: string;
  payload: Record<string, unknown>;
}

const invoice = {
  customer: 'cus_1',
  sku: 'SKU-9',
  quantity: 2,
  amountCents: 4000,
  to: 'ana@example.com',
  subject: 'Your invoice INV-1001',
  text: 'Hello Ana,\n\nyour order of 2 × SKU-9 (40.00 EUR) is confirmed. Invoice INV-1001 is attached.\n',
};

const approvals: DemoApproval[] = [
  {
    note: 'an invoice: the order row in the orders database, then the email (Mailpit)',
    effectId: 'invoice:INV-1001',
    destination: 'orders-sql',
    operation: 'invoice.send',
    payload: invoice,
  },
  {
    note: 'an event on JetStream',
    effectId: 'event:INV-1001-sent',
    destination: 'nats-jetstream',
    operation: 'event.publish',
    payload: { type: 'invoice.sent', data: { invoice: 'INV-1001', customer: 'cus_1' } },
  },
  {
    note: 'a refund at the keyed API',
    effectId: 'refund:A-1',
    destination: 'keyed-api',
    operation: 'refund.create',
    payload: { charge: 'ch_A1', amount: 4000, currency: 'EUR' },
  },
  {
    note: 'the same refund ID with another amount (conflict)',
    effectId: 'refund:A-1',
    destination: 'keyed-api',
    operation: 'refund.create',
    payload: { charge: 'ch_A1', amount: 4500, currency: 'EUR' },
  },
  {
    note: 'a refund the provider refuses',
    effectId: 'refund:A-2',
    destination: 'keyed-api',
    operation: 'refund.create',
    payload: { charge: 'ch_A2', amount: -5, currency: 'EUR' },
  },
  {
    note: 'a task for request-17',
    effectId: 'task:request-17',
    destination: 'keyed-api',
    operation: 'task.create',
    payload: { title: 'Prepare preview', request: 'request-17' },
  },
  {
    note: 'the same delivery again (absorbed)',
    effectId: 'task:request-17',
    destination: 'keyed-api',
    operation: 'task.create',
    payload: { title: 'Prepare preview', request: 'request-17' },
  },
  {
    note: 'its look-alike for request-18 (not lost)',
    effectId: 'task:request-18',
    destination: 'keyed-api',
    operation: 'task.create',
    payload: { title: 'Prepare preview', request: 'request-18' },
  },
];

/** This run's approvals: effect IDs under the run's tag, so each run approves new effects. */
export function demoApprovals(tag: string) {
  return approvals.map((a) => ({
    ...a,
    effectId: `${tag}.${a.effectId}`,
    approvedBy: 'demo@effect-ledger.local',
    authorizationRef: 'DEMO-APPROVAL-1',
  }));
}

/** The effect whose answer is lost: a post on the key-less feed, which nothing there dedupes. */
export function lostPost(tag: string) {
  return {
    effectId: `${tag}.post:launch`,
    destination: 'social-feed',
    operation: 'post.publish',
    payload: { channel: 'linkedin-ru', text: 'effect-ledger is live' },
    approvedBy: 'demo@effect-ledger.local',
    authorizationRef: 'DEMO-APPROVAL-1',
  };
}
