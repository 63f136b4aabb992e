// A small payments API of the package test's own (not our simulator): what a user's destination talks to. It
// takes an Idempotency-Key (the first response per key is stored and replayed; the key back with another body is
// a 400), lists payments by the reference stamped in their metadata, and keeps no body hash (the user's
// declaration computes it from the fields). It can lose the reply to the next payment after storing it: the
// connection is cut instead of answered.
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Payment {
  id: string;
  created_at: string;
  amount: number;
  currency: string;
  customer: string;
  metadata: Record<string, unknown>;
}

export interface PaymentsApi {
  url: string;
  /** Every payment it holds, oldest first. */
  payments(): Payment[];
  /** Every POST it received, with the key it carried. */
  posts(): { key: string | undefined; answered: 'created' | 'replayed' | 'refused' | 'cut' }[];
  /** The next payment is stored and its reply lost: the connection is cut before any byte of it leaves. */
  loseNextReply(): void;
  stop(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (text += chunk));
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}

function answer(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

export async function startPaymentsApi(): Promise<PaymentsApi> {
  const payments: Payment[] = [];
  const posts: ReturnType<PaymentsApi['posts']> = [];
  const keys = new Map<string, { hash: string; payment: Payment }>();
  let loseNext = false;

  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (req.method === 'POST' && url.pathname === '/v1/payments') {
      const text = await readBody(req);
      const key = req.headers['idempotency-key'] as string | undefined;
      const hash = createHash('sha256').update(text).digest('hex');
      const known = key ? keys.get(key) : undefined;
      if (known && known.hash !== hash) {
        posts.push({ key, answered: 'refused' });
        return answer(res, 400, { error: 'idempotency key reused with other parameters' });
      }
      if (known) {
        posts.push({ key, answered: 'replayed' });
        return answer(res, 200, known.payment, { 'idempotent-replayed': 'true' });
      }
      const body = JSON.parse(text) as Omit<Payment, 'id' | 'created_at'>;
      const payment: Payment = {
        id: `pay_${payments.length + 1}`,
        created_at: new Date().toISOString(),
        amount: body.amount,
        currency: body.currency,
        customer: body.customer,
        metadata: body.metadata ?? {},
      };
      payments.push(payment);
      if (key) keys.set(key, { hash, payment });
      if (loseNext) {
        loseNext = false;
        posts.push({ key, answered: 'cut' });
        req.socket.destroy();
        return;
      }
      posts.push({ key, answered: 'created' });
      return answer(res, 200, payment);
    }
    if (req.method === 'GET' && url.pathname === '/v1/payments') {
      const reference = url.searchParams.get('reference');
      return answer(res, 200, {
        data: payments.filter((p) => reference === null || p.metadata.reference === reference),
        has_more: false,
      });
    }
    const one = /^\/v1\/payments\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'GET' && one) {
      const payment = payments.find((p) => p.id === decodeURIComponent(one[1] ?? ''));
      return payment ? answer(res, 200, payment) : answer(res, 404, { error: 'no such payment' });
    }
    answer(res, 404, { error: 'not found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    payments: () => payments.map((p) => ({ ...p })),
    posts: () => [...posts],
    loseNextReply() {
      loseNext = true;
    },
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
