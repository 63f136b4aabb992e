// The user's conformance target for their payments destination (docs/conformance.md): the same destinations
// module format as EFFECT_LEDGER_DESTINATIONS, plus how the kit reaches the API, counts payments on the API
// itself, and what to send. Run: `npx effect-ledger-conformance ./payments-conformance.mjs payments`.
export { default } from './payments-destination.mjs';

export const conformance = {
  payments: {
    async start() {
      // The API runs already (a test server of the user's); the kit stands its proxies in front of it.
      const api = new URL(process.env.PAYMENTS_API_URL);
      return {
        upstream: api.host,
        env: (address) => ({ PAYMENTS_URL: `http://${address}` }),
        async count(reference) {
          const listed = await fetch(`${api.origin}/v1/payments?reference=${encodeURIComponent(reference)}`);
          return (await listed.json()).data.length;
        },
        sample: { operation: 'payment.create', payload: { amount: 990, currency: 'EUR', customer: 'cus_kit' } },
        stop: async () => {},
      };
    },
  },
};
