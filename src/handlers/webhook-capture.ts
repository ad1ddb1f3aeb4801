import { randomUUID } from 'node:crypto';
import { BodyCollector, captureWebhookRequest, type BodyBytes } from '../engines/webhook-capture/index.js';
import { sendReply, type NodeRequest, type NodeResponse, type RestReply } from '../http/reply.js';
import type { RouteRow, WebhookService } from '../services/webhooks/webhook-service.js';
import { AppError, isStorageFull, STORAGE_FULL_RETRY_AFTER_SECONDS, UNAVAILABLE_RETRY_AFTER_SECONDS } from '../errors.js';
import { renderProblemDetails } from '../http/problem-details.js';
import { clientOf } from '../http/request-client.js';

const NO_SUCH_ROUTE = 'No such route (it may have expired).';

/** `/<uuid>` or `/<uuid>/<anything>`: the capture endpoint. */
export const CAPTURE_PATH = /^\/([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})(?:\/|$)/;

/**
 * The capture endpoint on plain node:http (HTTP/1.1 and HTTP/2 alike): no framework and no body
 * parser sit in front, so the bytes are the ones the sender wrote. The sender is answered with the
 * route's response only after the capture is committed (group commit in WebhookService).
 */
export function createCaptureHandler(webhooks: WebhookService, maxBody: number, onError: (error: unknown, requestId: string) => void) {
  async function handleCapture(req: NodeRequest, res: NodeResponse, requestId: string, routeId: string): Promise<string> {
    const receivedAt = new Date();
    let route: RouteRow | null;
    const found = webhooks.routeForCapture(routeId);
    try {
      route = found instanceof Promise ? await found : found;
    } catch (error) {
      onError(error, requestId);
      req.resume();
      reply(res, req.method, tryAgainLater(error));
      return '/{routeId}';
    }
    if (!route) {
      // Nothing is read or stored for an unknown route; the rest of the body is discarded.
      req.resume();
      reply(res, req.method, renderProblemDetails(new AppError('not_found', NO_SUCH_ROUTE)));
      return '/{routeId}';
    }
    // A delayed answer holds the sender's socket: bounded per route, and refused (not recorded) beyond.
    const releaseDelay = route.delayMs > 0 ? webhooks.takeDelaySlot(route.id) : undefined;
    if (releaseDelay === null) {
      req.resume();
      reply(
        res,
        req.method,
        renderProblemDetails(new AppError('resource_exhausted', TOO_MANY_DELAYED, { retryAfterSeconds: Math.ceil(route.delayMs / 1000) })),
      );
      return '/{routeId}';
    }
    try {
      return await captureAndAnswer(req, res, requestId, route, receivedAt);
    } finally {
      releaseDelay?.();
    }
  }

  async function captureAndAnswer(req: NodeRequest, res: NodeResponse, requestId: string, route: RouteRow, receivedAt: Date): Promise<string> {
    const body = await readCapped(req, maxBody);
    if (!body) return '/{routeId}'; // the client went away before the body was complete
    const client = clientOf(req);
    const record = captureWebhookRequest({
      id: randomUUID(),
      routeId: route.id,
      receivedAt,
      method: req.method ?? 'GET',
      target: req.url ?? '/',
      rawHeaders: req.rawHeaders,
      body,
      remoteAddress: client.address,
      proxyChain: client.proxies,
      httpVersion: req.httpVersion,
    });
    let outcome;
    try {
      outcome = await webhooks.capture(record, route);
    } catch (error) {
      onError(error, requestId);
      reply(res, req.method, tryAgainLater(error));
      return '/{routeId}';
    }
    if (outcome === 'stored' && route.delayMs > 0) await delay(route.delayMs, res);
    if (outcome === 'route_gone') {
      reply(res, req.method, renderProblemDetails(new AppError('not_found', NO_SUCH_ROUTE)));
    } else if (route.response) {
      const headers: Record<string, string> = { ...route.response.headers };
      if (route.response.body !== '' && !Object.keys(headers).some((name) => name.toLowerCase() === 'content-type'))
        headers['content-type'] = 'text/plain; charset=utf-8';
      reply(res, req.method, { status: route.response.status, headers, body: Buffer.from(route.response.body, 'utf8') });
    } else {
      reply(res, req.method, { status: 200, body: { ok: true, requestId: record.id } });
    }
    return '/{routeId}';
  }

  return handleCapture;
}

const TOO_MANY_DELAYED = 'Too many delayed answers pending on this route; try again later.';

/** Waits `ms`, or less when the sender hangs up (its slot is then free at once). */
function delay(ms: number, res: NodeResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      res.off('close', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    res.once('close', done);
  });
}

/** The store could not take the capture (or find its route): not acknowledged, the sender may retry (later when its disk is full). */
function tryAgainLater(error: unknown): RestReply {
  const retryAfterSeconds = isStorageFull(error) ? STORAGE_FULL_RETRY_AFTER_SECONDS : UNAVAILABLE_RETRY_AFTER_SECONDS;
  return renderProblemDetails(new AppError('unavailable', 'the capture was not stored', { retryAfterSeconds }));
}

/** Reads the body, keeping the first `limit` bytes; undefined when the request was aborted. */
function readCapped(req: NodeRequest, limit: number): Promise<BodyBytes | undefined> {
  return new Promise((resolve) => {
    const collector = new BodyCollector(limit);
    req.on('data', (chunk: Buffer) => collector.push(chunk));
    req.once('end', () => resolve(collector.finish()));
    req.once('error', () => resolve(undefined));
    req.once('aborted', () => resolve(undefined));
  });
}

/**
 * Sent with every answer of the capture path, after the route's own headers so none can replace
 * them: a route's response is chosen by whoever created the route, and it is served on this
 * server's origin, so it must never run as a page here (no script, no plugins, its own opaque
 * origin) nor be sniffed into another type.
 */
const ROUTE_RESPONSE_GUARD_HEADERS = { 'content-security-policy': "default-src 'none'; sandbox", 'x-content-type-options': 'nosniff' } as const;

function reply(res: NodeResponse, method: string | undefined, answer: RestReply): void {
  if (res.headersSent || res.destroyed) return;
  sendReply(res, { ...answer, headers: { ...answer.headers, ...ROUTE_RESPONSE_GUARD_HEADERS } }, undefined, method === 'HEAD');
}
