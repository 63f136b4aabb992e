// The worker hosts one adapter per destination name, but each cell of the matrix needs its own proxy: the
// adapter the kit's worker gets routes each send by its effect. A cell's first send of the step under test
// goes through the cell's faulty proxy; every later send, and every read, through a clean one. The faulty
// connection keeps its fault: whatever that first send left running finishes (or not) under it, as it
// would on a real network. Under a fault of the provider's shape (the kit's HTTP proxy) the provider itself is
// faulty: every send of the step and every read of it go through the cell's proxy. Every send is remembered, so
// a cell can wait for what it left running.
import type { DestinationAdapter, SendOutcome, SendRequest } from '../domain/destination-contract.js';

export interface Route {
  /** The adapter behind the cell's faulty proxy. */
  faulty: DestinationAdapter;
  /** The key whose first send meets the fault (E, E~further, E#r2). */
  faultyKey: string;
  /** Keys the kit refuses itself, nothing sent: revision 1 of a revision cell without a refusal of its own. */
  refuse: ReadonlySet<string>;
  /** Every send with the faulty key and every read of it through the faulty adapter, not only the first send. */
  always?: boolean;
  used: boolean;
  /** Every send made for the cell, settled or not. */
  sends: Promise<unknown>[];
}

export const KIT_REFUSAL = 'refused by the conformance kit before anything left, so that a revision follows';

export class Router {
  readonly #routes = new Map<string, Route>();
  /** Routes whose every read goes through their faulty adapter, by the key read. */
  readonly #reads = new Map<string, Route>();

  constructor(readonly clean: DestinationAdapter) {}

  route(effectId: string, route: Omit<Route, 'used' | 'sends'>): Route {
    const full: Route = { ...route, used: false, sends: [] };
    this.#routes.set(effectId, full);
    if (full.always) this.#reads.set(full.faultyKey, full);
    return full;
  }

  /** The adapter the worker hosts under the destination's name. */
  adapter(): DestinationAdapter {
    const { clean } = this;
    return {
      ...clean,
      send: (request) => this.#send(request),
      readBack: (request) => this.#reader(request.idempotencyKey).readBack(request),
      lookup: (externalId, request) => this.#reader(request.idempotencyKey).lookup(externalId, request),
    };
  }

  #reader(key: string): DestinationAdapter {
    return this.#reads.get(key)?.faulty ?? this.clean;
  }

  #send(request: SendRequest): Promise<SendOutcome> {
    const route = this.#routes.get(request.effectId);
    if (route?.refuse.has(request.idempotencyKey))
      return Promise.resolve({ class: 'rejected', httpStatus: 400, detail: { reason: KIT_REFUSAL } });
    let via = this.clean;
    if (route && (!route.used || route.always) && request.idempotencyKey === route.faultyKey) {
      route.used = true;
      via = route.faulty;
    }
    const sent = via.send(request);
    route?.sends.push(sent.catch(() => undefined));
    return sent;
  }
}
