import { readFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import type { Settings } from '../config.js';
import { AppError, UNAVAILABLE_RETRY_AFTER_SECONDS } from '../errors.js';
import { sendReply, type NodeRequest, type NodeResponse } from '../http/reply.js';
import type { Logger } from '../logger.js';
import type { Database } from '../store/database.js';
import { readSchemaState, schemaReadiness, type SchemaState } from '../store/schema-state.js';
import { renderUserApiError } from '../handlers/users.js';
import { createOnePortServer } from './protocol-switch.js';

/**
 * How often a server waiting for its migrations looks again: one read of `knex_migrations` (a few
 * dozen rows), so it turns ready within this of `cfs-server migrate` finishing.
 */
const RECHECK_MS = 2000;

/** The standby server of a start with MIGRATE=false on a schema that is behind; the real server takes its port over. */
export interface SchemaStandby {
  port: number;
  close(): Promise<void>;
}

/**
 * Migrations in the database that this code does not know: a newer release ran them (a rolling
 * update). Served on, since migrations are additive until a later release contracts them
 * (docs/operations.md, Migrations); said once, at start.
 */
export function warnIfSchemaAhead(logger: Logger, unknown: string[]): void {
  if (unknown.length > 0)
    logger.warn({ unknownMigrations: unknown }, 'the database has migrations this release does not know (a newer release ran them); serving on');
}

/**
 * A start with MIGRATE=false: the schema must be the code's. When migrations of this code are missing
 * (a release rolled out before its `migrate` Job ran), the server cannot be built — its services read
 * and write tables that may not exist yet — and must not crash either: a standby server takes the port
 * and answers `/healthz` 200 (the process is up), `/readyz` 503 naming the missing migrations, and
 * every other request 503 (REST and GraphQL in the server's default error shape with Retry-After,
 * gRPC and gRPC-Web UNAVAILABLE, Connect `unavailable`), so a balancer never routes to it. It looks
 * again every RECHECK_MS; resolves once nothing is missing, with the standby still listening (undefined
 * when nothing was missing at all), so the caller builds the server, closes the standby and listens on
 * its port. A schema ahead of the code is logged once and served on.
 */
export async function waitForSchema(config: Settings<'server'>, database: Database, logger: Logger): Promise<SchemaStandby | undefined> {
  let state = await readSchemaState(database.knex);
  warnIfSchemaAhead(logger, state.unknown);
  if (state.missing.length === 0) return undefined;
  const handle = (req: NodeRequest, res: NodeResponse) => answerNotReady(req, res, state);
  const server = createOnePortServer({
    http1: http.createServer({ keepAliveTimeout: config.keepAliveTimeoutMs, headersTimeout: config.headersTimeoutMs, requestTimeout: config.requestTimeoutMs }),
    serveHttp1: handle,
    http2: http2.createServer({}, handle),
    tls: config.tlsCert && config.tlsKey ? { cert: readFileSync(config.tlsCert, 'utf8'), key: readFileSync(config.tlsKey, 'utf8') } : undefined,
    firstByteTimeoutMs: config.firstByteTimeoutMs,
    http2IdleTimeoutMs: config.http2IdleTimeoutMs,
  });
  const port = await server.listen(config.port, config.host);
  logger.warn({ port, missingMigrations: state.missing }, 'listening, not ready: waiting for migrations (MIGRATE=false; run `cfs-server migrate`)');
  const standby = { port, close: () => server.close(0) };
  try {
    while (state.missing.length > 0) {
      await new Promise((resolve) => setTimeout(resolve, RECHECK_MS));
      state = await readSchemaState(database.knex).catch((error: unknown) => {
        logger.warn({ err: error }, 'the schema check failed; trying again');
        return state;
      });
    }
  } catch (error) {
    await standby.close();
    throw error;
  }
  logger.info({ port }, 'the migrations are done; starting');
  return standby;
}

/** The standby's answer: see waitForSchema. */
function answerNotReady(req: NodeRequest, res: NodeResponse, state: SchemaState): void {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  const head = req.method === 'HEAD';
  const readiness = schemaReadiness(state);
  const message = `The service is starting: ${readiness.detail ?? 'the schema is being checked'}.`;
  if (path === '/healthz') return sendReply(res, { status: 200, body: { status: 'ok' } }, undefined, head);
  if (path === '/readyz') {
    const body = { status: 'not ready', schema: readiness.detail, missingMigrations: state.missing };
    return sendReply(res, { status: 503, body, headers: { 'retry-after': String(UNAVAILABLE_RETRY_AFTER_SECONDS) } }, undefined, head);
  }
  const contentType = String(req.headers['content-type'] ?? '');
  if (/^application\/grpc/.test(contentType)) {
    // Trailers-only: gRPC and gRPC-Web clients read the status from these headers (14 = UNAVAILABLE).
    res.writeHead(200, { 'content-type': contentType.split(';')[0] ?? 'application/grpc', 'grpc-status': '14', 'grpc-message': encodeURIComponent(message) });
    res.end();
    return;
  }
  if (/^\/[A-Za-z_]\w*(\.\w+)+\/[A-Za-z_]\w*$/.test(path)) {
    // Connect: its error body and the HTTP status of `unavailable`.
    return sendReply(
      res,
      { status: 503, body: { code: 'unavailable', message }, headers: { 'retry-after': String(UNAVAILABLE_RETRY_AFTER_SECONDS) } },
      undefined,
      head,
    );
  }
  sendReply(res, renderUserApiError(new AppError('unavailable', message, { retryAfterSeconds: UNAVAILABLE_RETRY_AFTER_SECONDS })), undefined, head);
}
