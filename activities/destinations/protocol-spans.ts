// The span of each request an adapter makes, with its protocol's semantic-convention attributes (docs/tracing.md):
// HTTP (every JSON request of http-outcome.ts and http-read.ts), an SMTP session, a JetStream publish, a SQL
// statement. Each sits inside the provider call's span (../provider-spans.ts). A no-op without an OpenTelemetry SDK.
import { type Attributes, context, propagation, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import {
  ATTR_DB_COLLECTION_NAME,
  ATTR_DB_NAMESPACE,
  ATTR_DB_OPERATION_NAME,
  ATTR_DB_SYSTEM_NAME,
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_NETWORK_PROTOCOL_NAME,
  ATTR_NETWORK_TRANSPORT,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
  DB_SYSTEM_NAME_VALUE_POSTGRESQL,
} from '@opentelemetry/semantic-conventions';
import { inSpan } from '../provider-spans.js';

const DEFAULT_PORTS: Record<string, number> = {
  'http:': 80,
  'https:': 443,
  'postgres:': 5432,
  'postgresql:': 5432,
  'nats:': 4222,
};

/** host and port of a URL, the port made explicit (server.port is the port used, default or not). */
function serverOf(url: string): Attributes {
  try {
    const u = new URL(url);
    const port = u.port ? Number(u.port) : DEFAULT_PORTS[u.protocol];
    return { [ATTR_SERVER_ADDRESS]: u.hostname, ...(port === undefined ? {} : { [ATTR_SERVER_PORT]: port }) };
  } catch {
    return {};
  }
}

/** The URL as the span shows it: never a user name or password it may carry. */
function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.toString();
  } catch {
    return url;
  }
}

/**
 * fetch, as an HTTP client span (its name is the method). The trace context goes along in `traceparent`, so a
 * provider that traces joins the effect's trace.
 */
export function tracedFetch(url: string, init: RequestInit = {}): Promise<Response> {
  const method = init.method ?? 'GET';
  const attributes = { [ATTR_HTTP_REQUEST_METHOD]: method, [ATTR_URL_FULL]: shownUrl(url), ...serverOf(url) };
  return inSpan(
    method,
    SpanKind.CLIENT,
    attributes,
    (span) => {
      if (!span.isRecording()) return fetch(url, init);
      const headers: Record<string, string> = { ...(init.headers as Record<string, string> | undefined) };
      propagation.inject(context.active(), headers);
      return fetch(url, { ...init, headers });
    },
    (response, span) => {
      span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, response.status);
      if (response.status >= 400) {
        span.setAttribute(ATTR_ERROR_TYPE, String(response.status));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
    },
  );
}

/** One SMTP session (connect to the server's reply after the message's final "."). */
export function smtpSpan<T>(host: string, port: number, session: () => Promise<T>): Promise<T> {
  return inSpan(
    'smtp send',
    SpanKind.CLIENT,
    {
      [ATTR_SERVER_ADDRESS]: host,
      [ATTR_SERVER_PORT]: port,
      [ATTR_NETWORK_PROTOCOL_NAME]: 'smtp',
      [ATTR_NETWORK_TRANSPORT]: 'tcp',
    },
    session,
  );
}

// Messaging attributes are still incubating in the semantic conventions: named here, as their docs advise.
const MESSAGING = {
  system: 'messaging.system',
  operationType: 'messaging.operation.type',
  operationName: 'messaging.operation.name',
  destination: 'messaging.destination.name',
  destinationTemplate: 'messaging.destination.template',
  messageId: 'messaging.message.id',
} as const;

/** A JetStream publish, as a producer span: the subject is the key's own, so the name shows its template. */
export function publishSpan<T>(
  servers: string,
  subject: { name: string; template: string },
  messageId: string,
  publish: () => Promise<T>,
): Promise<T> {
  return inSpan(
    `publish ${subject.template}`,
    SpanKind.PRODUCER,
    {
      [MESSAGING.system]: 'nats',
      [MESSAGING.operationType]: 'send',
      [MESSAGING.operationName]: 'publish',
      [MESSAGING.destination]: subject.name,
      [MESSAGING.destinationTemplate]: subject.template,
      [MESSAGING.messageId]: messageId,
      ...serverOf(`nats://${(servers.split(',')[0] ?? '').replace(/^[a-z]+:\/\//, '')}`),
    },
    publish,
  );
}

/** A SQL statement on its own connection to PostgreSQL (the URL's credentials are never shown). */
export function sqlSpan<T>(databaseUrl: string, operation: string, table: string, statement: () => Promise<T>) {
  let database: string | undefined;
  try {
    database = decodeURIComponent(new URL(databaseUrl).pathname.slice(1)) || undefined;
  } catch {}
  return inSpan(
    `${operation} ${table}`,
    SpanKind.CLIENT,
    {
      [ATTR_DB_SYSTEM_NAME]: DB_SYSTEM_NAME_VALUE_POSTGRESQL,
      [ATTR_DB_OPERATION_NAME]: operation,
      [ATTR_DB_COLLECTION_NAME]: table,
      ...(database ? { [ATTR_DB_NAMESPACE]: database } : {}),
      ...serverOf(databaseUrl),
    },
    statement,
  );
}
