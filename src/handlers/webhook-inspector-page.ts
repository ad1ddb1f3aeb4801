import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { AppError, toAppError } from '../errors.js';
import { sendReply, type NodeRequest, type NodeResponse } from '../http/reply.js';
import type { StoredCapture, WebhookService } from '../services/webhooks/webhook-service.js';
import { PROBLEM_CONTENT_TYPE, renderProblemDetails } from '../http/problem-details.js';
import type { WebhookUrlSettings } from './webhooks.js';
import { servingOriginOf } from '../http/serving-origin.js';
import { clientAddressOf, clientOf } from '../http/request-client.js';

/**
 * No inline script or style, no third-party origin: the page's own script and stylesheet come from
 * `/inspect-assets/`, and captured content is only ever inserted as text.
 */
const INSPECTOR_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const PAGE_HEADERS = {
  'content-security-policy': INSPECTOR_CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  // The route id in the URL is the capability: never send it to another site as a Referer.
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

const ASSETS: Record<string, { file: string; type: string }> = {
  '/inspect-assets/inspector.js': { file: 'inspector.js', type: 'text/javascript; charset=utf-8' },
  '/inspect-assets/inspector.css': { file: 'inspector.css', type: 'text/css; charset=utf-8' },
  // Named by the page, so a browser does not ask for /favicon.ico (a 404 in its console).
  '/inspect-assets/favicon.svg': { file: 'favicon.svg', type: 'image/svg+xml' },
};

/** Captures read per query while a reconnecting stream (Last-Event-ID) catches up. */
const REPLAY_CHUNK = 100;
const HEARTBEAT_MS = 15_000;
const STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-store, no-transform',
  'x-accel-buffering': 'no',
  'x-content-type-options': 'nosniff',
};

/** The browser side of the inspector: `GET /inspect`, the HTML page, its assets and the event stream. */
export function createInspectorPages(webhooks: WebhookService, config: WebhookUrlSettings) {
  const assets = new Map(
    Object.entries(ASSETS).map(([path, asset]) => [
      path,
      { body: readFileSync(new URL(`./webhook-inspector-assets/${asset.file}`, import.meta.url)), type: asset.type },
    ]),
  );
  /** Ends an open stream; with `retryMs`, first tells the client how soon to reconnect. */
  const streams = new Set<(retryMs?: number) => void>();

  return {
    /** Serves `/inspect-assets/*`; undefined when the path is not an asset. */
    asset(path: string, res: NodeResponse): boolean {
      const asset = assets.get(path);
      if (!asset) return false;
      write(res, 200, { 'content-type': asset.type, 'cache-control': 'public, max-age=300', 'x-content-type-options': 'nosniff' }, asset.body);
      return true;
    },

    /** `GET /inspect`: a new route with the defaults, and a redirect to its page. */
    async openNew(req: NodeRequest, res: NodeResponse): Promise<void> {
      let route;
      try {
        route = await webhooks.createRoute(undefined, servingOriginOf(config, req.headers, clientOf(req), config.webhookPublicUrl), clientAddressOf(req));
      } catch (error) {
        if (!(error instanceof AppError && error.code === 'resource_exhausted')) throw error;
        writeProblem(res, error);
        return;
      }
      write(res, 302, { location: `/inspect/${route.routeId}`, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' }, Buffer.alloc(0));
    },

    /** The HTML page of one route; the script fills it from the JSON API and the event stream. */
    async page(routeId: string, res: NodeResponse): Promise<void> {
      const route = await webhooks.findLiveRoute(routeId);
      if (!route) {
        write(
          res,
          404,
          { ...PAGE_HEADERS, 'content-type': 'text/html; charset=utf-8' },
          Buffer.from(
            shell(
              'Route not found',
              '<main><h1>Route not found</h1><p>This route does not exist or has expired. <a href="/inspect">Create a new one</a>.</p></main>',
            ),
          ),
        );
        return;
      }
      const body = shell(
        'Webhook inspector',
        `<header><h1>Webhook inspector</h1>
<p>Send any request to <code id="capture-url"></code> <button type="button" id="copy-url">Copy</button></p>
<p class="meta">Expires <time id="expires-at" datetime="${route.expiresAt.toISOString()}">${route.expiresAt.toISOString()}</time> · <span id="live-status">connecting…</span> · <button type="button" id="delete-route">Delete route</button></p></header>
<form id="search" role="search"><input type="search" id="search-q" name="q" maxlength="200" placeholder="Search path, query, headers, body" aria-label="Search captures">
<select id="search-method" name="method" aria-label="Method"><option value="">any method</option><option>GET</option><option>POST</option><option>PUT</option><option>PATCH</option><option>DELETE</option><option>OPTIONS</option><option>HEAD</option></select>
<button type="submit">Search</button> <button type="button" id="search-clear" hidden>Clear</button> <a id="download-har" href="/inspect/${route.id}/export.har" download>Download HAR</a> <span id="search-status" class="meta"></span></form>
<main><p id="empty">No requests yet. Try: <code id="curl-example"></code></p><ol id="requests" reversed></ol><button type="button" id="load-more" hidden>Load older requests</button></main>`,
        route.id,
      );
      write(res, 200, { ...PAGE_HEADERS, 'content-type': 'text/html; charset=utf-8' }, Buffer.from(body));
    },

    /** `GET /inspect/<id>/stream`: Server-Sent Events, one `data:` line of capture JSON per capture. */
    async stream(routeId: string, req: NodeRequest, res: NodeResponse): Promise<void> {
      const route = await webhooks.findLiveRoute(routeId);
      if (!route) {
        writeProblem(res, new AppError('not_found', 'No such route (it may have expired).'));
        return;
      }
      const out = res as ServerResponse;
      // HEAD: the stream's headers, and no endless body.
      if (req.method === 'HEAD') {
        out.writeHead(200, STREAM_HEADERS);
        out.end();
        return;
      }
      // The highest seq shown (or started after): where a catch-up after missed notifications resumes.
      let cursor: number | undefined;
      let backlog: StoredCapture[] | undefined = [];
      // Views are built asynchronously (multipart parsing); events still go out in capture order.
      let writing = Promise.resolve();
      const send = (capture: StoredCapture) => {
        // A route's seqs commit in order (WebhookRepository.storeBatch), so one at or below the
        // cursor was shown already (replay and notification overlap) or committed before this
        // stream's start: either way not an event for this client.
        if (cursor !== undefined && capture.seq <= cursor) return;
        cursor = capture.seq;
        const view = webhooks.view(capture);
        writing = writing.then(async () => {
          const event = `id: ${capture.seq}\ndata: ${JSON.stringify(await view)}\n\n`;
          if (!ended) out.write(event);
        });
      };
      let ended = false;
      let heartbeat: NodeJS.Timeout | undefined;
      const end = (retryMs?: number) => {
        if (ended) return;
        ended = true;
        clearInterval(heartbeat);
        unsubscribe();
        streams.delete(end);
        if (!out.headersSent || res.writableEnded) return;
        if (retryMs === undefined) res.end();
        else res.end(`retry: ${retryMs}\n\n`);
      };
      const unsubscribe = webhooks.subscribe(route.id, {
        onCapture: (capture) => (backlog ? backlog.push(capture) : send(capture)),
        onRouteGone: () => end(),
        cursor: () => cursor,
      });
      streams.add(end);
      req.once('close', () => end());
      res.once('close', () => end());
      // Where the stream starts is known before its headers go out: a client that got them is
      // caught up after any later outage. A store that cannot answer yet is a plain 503.
      const lastEventId = Number(req.headers['last-event-id']);
      let replay: StoredCapture[] = [];
      try {
        if (Number.isSafeInteger(lastEventId) && lastEventId >= 0) {
          replay = await webhooks.capturesAfter(route.id, lastEventId, REPLAY_CHUNK);
          cursor = lastEventId;
        } else {
          cursor = await webhooks.lastSeq(route.id);
        }
      } catch (error) {
        end();
        const failure = toAppError(error);
        if (failure.code !== 'unavailable') throw error;
        writeProblem(res, failure);
        return;
      }
      if (ended) {
        // The route went away while the stream was being set up.
        if (!res.destroyed) writeProblem(res, new AppError('not_found', 'No such route (it may have expired).'));
        return;
      }
      out.writeHead(200, STREAM_HEADERS);
      // The `id:` without data sets the client's last event id to where this stream starts, so a
      // client that reconnects before any capture still resumes from here (nothing in between lost).
      out.write(`retry: 2000\nid: ${cursor}\n: connected\n\n`);
      heartbeat = setInterval(() => out.write(': keep-alive\n\n'), HEARTBEAT_MS);
      // Catch up on everything since Last-Event-ID, a chunk at a time (a route keeps at most
      // WEBHOOK_MAX_REQUESTS captures); each chunk is written before the next is read.
      for (let chunk = replay; ;) {
        for (const capture of chunk) send(capture);
        const last = chunk[chunk.length - 1];
        if (chunk.length < REPLAY_CHUNK || !last || ended) break;
        await writing;
        try {
          chunk = await webhooks.capturesAfter(route.id, last.seq, REPLAY_CHUNK);
        } catch (error) {
          end();
          throw error;
        }
      }
      const pending = backlog;
      backlog = undefined;
      for (const capture of pending) send(capture);
    },

    /**
     * Ends every open event stream (shutdown must not wait for endless responses) with a `retry:`
     * of half a second to a second and a half, spread so that a replica's listeners do not all come
     * back in the same instant: browsers (EventSource) and `cfs webhooks listen` reconnect, through
     * the balancer to another replica, and resume from their Last-Event-ID.
     */
    closeStreams(): void {
      for (const end of [...streams]) end(500 + Math.floor(Math.random() * 1000));
    },
  };
}

function shell(title: string, content: string, routeId?: string): string {
  const data = routeId ? ` data-route-id="${routeId.replace(/[^0-9a-f-]/g, '')}"` : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<link rel="icon" href="/inspect-assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/inspect-assets/inspector.css">
<script src="/inspect-assets/inspector.js" defer></script>
</head>
<body${data}>
${content}
</body>
</html>
`;
}

/** An error of these pages in the webhook API's shape (problem details). */
function writeProblem(res: NodeResponse, error: AppError): void {
  const reply = renderProblemDetails(error);
  write(res, reply.status, { ...reply.headers, 'content-type': reply.contentType ?? PROBLEM_CONTENT_TYPE }, Buffer.from(JSON.stringify(reply.body)));
}

function write(res: NodeResponse, status: number, headers: Record<string, string>, body: Buffer): void {
  sendReply(res, { status, body, headers }, undefined, false);
}
