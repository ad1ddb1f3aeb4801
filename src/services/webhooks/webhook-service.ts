import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { components } from '../../../generated/openapi/webhooks.js';
import type { Settings } from '../../config.js';
import { contractCheck } from '../../http/contract-rules.js';
import { AppError, type Violation } from '../../errors.js';
import {
  describeCapturedRequest,
  harDocument,
  parseMultipart,
  replayUrl,
  toCurlCommand,
  toHarEntry,
  type CapturedRecord,
  type CapturedRequestView,
} from '../../engines/webhook-capture/index.js';
import {
  DEFAULT_HMAC_HEADER,
  DEFAULT_TOLERANCE_SECONDS,
  SIGNATURE_SCHEMES,
  verifySignature,
  type VerifyConfig,
} from '../../engines/webhook-signature/index.js';
import type { Database } from '../../store/database.js';
import { decodeWebhookEvent, WEBHOOK_CHANNEL } from '../../store/repositories/webhook-events.js';
import {
  WebhookRepository,
  type CapturePlan,
  type CaptureQuery,
  type RouteResponseConfig,
  type RouteRow,
  type StoredCapture,
} from '../../store/repositories/webhook-repository.js';
import { CaptureWriter, type CaptureOutcome, type CommittedBatch } from './capture-writer.js';
import { LiveFeed, type FeedSubscriber } from './live-feed.js';
import { RouteCache } from './route-cache.js';
import { RouteCreationLimit } from './route-limit.js';
import { KeyedSlots } from './keyed-slots.js';
import { clientKey } from '../client-address.js';
import { WebhookSweeper } from './sweeper.js';

export type { RouteRow, StoredCapture };
/** Where a background failure happened, for the log. */
export type WebhookWorker = 'webhook-writer' | 'webhook-feed' | 'webhook-sweeper';

type CreateRouteRequest = components['schemas']['CreateRouteRequest'];
type Route = components['schemas']['Route'];
type Inspection = components['schemas']['Inspection'];
type Har = components['schemas']['Har'];

/** What a list asks for: the page size and cursor of the contract, and the search filters. */
export interface InspectQuery {
  limit: number;
  before?: string | undefined;
  q?: string | undefined;
  method?: string | undefined;
}

/**
 * A JSON document produced as its reader asks: `chunks` spell its text (`Document` is its type, for
 * the compiler only). `done` must be called once when the reading is over, however it ended.
 */
export interface ChunkedDocument<Document> {
  readonly chunks: AsyncIterable<string>;
  done(): void;
  readonly document?: Document;
}

/**
 * The contract's bounds of a new route (lifetime, status, delay, secret, header, tolerance), checked
 * here too: the inspector page creates routes without the REST engine's validation.
 */
const createRouteRules = contractCheck('webhooks', 'CreateRouteRequest');
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * What a route's response may set. A route answers on this server's own origin, so a header that a
 * browser acts on (Set-Cookie, Location, Access-Control-*, Refresh, Link, Content-Disposition,
 * WWW-Authenticate, CSP…) would let anyone who creates a route plant cookies, redirect, or open
 * the API to other sites. Only headers with no such effect are allowed: these, and `X-*` custom
 * headers except the ones below. Everything else is refused at creation (docs/webhooks.md).
 */
const ROUTE_RESPONSE_HEADERS = ['content-type', 'cache-control', 'content-language', 'etag', 'expires', 'last-modified', 'retry-after'] as const;
/** X- headers a browser or a proxy in front of this server acts on, or that the server sets itself. */
const DENIED_X_HEADERS =
  /^x-(content-type-options|frame-options|xss-protection|dns-prefetch-control|permitted-cross-domain-policies|download-options|request-id|forwarded-.*|real-ip|accel-.*|sendfile|lighttpd-send-file)$/;
/**
 * Content-Types a route may answer with: data, never a document a browser renders as a page. XML
 * stays allowed (TwiML and SOAP senders expect it); it runs no script under the sandbox CSP every
 * route response carries, and the XHTML and SVG types are not on the list.
 */
const ROUTE_CONTENT_TYPE =
  /^(application\/(json|[a-z0-9.+-]+\+json|xml|x-www-form-urlencoded|octet-stream)|text\/(plain|csv|xml))\s*(;\s*charset=[A-Za-z0-9._-]+)?$/i;

/**
 * Rules of the webhook inspector: route lifetime and sender responses, capture (through the route
 * cache and the group-commit writer), inspection with cursor pages, live streams (the feed every
 * process fills from NOTIFY), deletion and the sweeping of expired routes.
 */
export class WebhookService {
  private readonly repository: WebhookRepository;
  private readonly routes: RouteCache;
  private readonly writer: CaptureWriter;
  private readonly feed: LiveFeed;
  private readonly sweeper: WebhookSweeper;
  private readonly creations: RouteCreationLimit;
  private readonly delays: KeyedSlots;
  private readonly reads: KeyedSlots;
  private unlisten: (() => Promise<void>) | undefined;

  constructor(
    knex: Knex,
    private readonly config: Settings<'webhooks'>,
    onError: (error: unknown, worker: WebhookWorker) => void = () => undefined,
  ) {
    this.repository = new WebhookRepository(knex, config.webhookListBodyBytes);
    this.delays = new KeyedSlots(config.webhookDelayConcurrency);
    this.reads = new KeyedSlots(config.webhookReadsPerAddress);
    this.routes = new RouteCache((id) => this.repository.findLiveRoute(id), undefined, undefined, undefined, config.webhookRouteCacheBytes);
    this.creations = new RouteCreationLimit(knex, { maxPerWindow: config.webhookRouteLimit, windowSeconds: config.webhookRouteWindowSeconds });
    this.writer = new CaptureWriter({
      store: (records) => this.repository.storeBatch(records, config.webhookMaxRequests),
      batchMs: config.webhookBatchMs,
      batchRows: config.webhookBatchRows,
      // One batch at a time, on PostgreSQL too: measured, overlapping batches only queue on the route
      // row's lock and shrink the batches (bench/webhook-capture.ts: 6.6k/s with 1, 3.5k/s with 2).
      maxInFlight: 1,
      onError: (error) => onError(error, 'webhook-writer'),
    });
    this.feed = new LiveFeed({
      load: (routeId, seqs) => this.repository.capturesBySeq(routeId, seqs),
      loadAfter: async (routeId, afterSeq, limit) =>
        (await this.repository.findLiveRoute(routeId)) ? this.repository.capturesAfter(routeId, afterSeq, limit) : null,
      onRouteGone: (routeId) => this.routes.invalidate(routeId),
      onError: (error) => onError(error, 'webhook-feed'),
    });
    this.sweeper = new WebhookSweeper(this.repository, config.webhookSweepIntervalSeconds * 1000, (error) => onError(error, 'webhook-sweeper'), {
      chunk: config.webhookSweepChunk,
    });
  }

  /**
   * Starts the background work: LISTEN for the captures and deletions of every process (the live
   * streams and the route cache follow them) and the sweeper. `onReconnect` is told when the
   * LISTEN connection came back and the missed events are being caught up.
   */
  async start(db: Pick<Database, 'listen'>, onReconnect?: (channel: string) => void): Promise<void> {
    this.unlisten = await db.listen(
      WEBHOOK_CHANNEL,
      (payload) => {
        const event = decodeWebhookEvent(payload);
        if (event) this.feed.notify(event);
      },
      {
        // Deletions and captures announced while the LISTEN connection was down were missed.
        onReconnect: () => {
          onReconnect?.(WEBHOOK_CHANNEL);
          this.routes.clear();
          this.feed.resync();
        },
      },
    );
    this.sweeper.start();
  }

  /** Ends the live streams, then the sweeper, the pending captures' commit and the LISTEN. */
  async stop(): Promise<void> {
    this.feed.closeAll();
    await this.sweeper.stop();
    await this.writer.stop();
    await this.unlisten?.();
  }

  /** Estimated bytes the route cache holds (bounded by WEBHOOK_ROUTE_CACHE_BYTES). */
  get routeCacheBytes(): number {
    return this.routes.heldBytes;
  }

  /** Tells `observer` what each group commit stored (metrics). */
  observeCaptureBatches(observer: (batch: CommittedBatch) => void): void {
    this.writer.observeBatches(observer);
  }

  /**
   * Creates a route; `baseUrl` is where this server is reached (for the `url`s in the answer).
   * `clientAddress` pays for it: each address may create `WEBHOOK_ROUTE_LIMIT` routes per window
   * (input is checked first, so a refused request costs nothing).
   */
  async createRoute(input: CreateRouteRequest | undefined, baseUrl: string, clientAddress: string | undefined): Promise<Route> {
    const outsideContract = createRouteRules(input ?? {});
    if (outsideContract.length > 0) throw invalid(outsideContract);
    const ttlSeconds = input?.ttlSeconds ?? this.config.webhookDefaultTtlSeconds;
    const violations: Violation[] = [];
    const response = input?.response ? checkedResponse(input.response, violations) : null;
    const delayMs = input?.response?.delayMs ?? 0;
    const verify = input?.verify ? checkedVerify(input.verify, violations) : null;
    if (violations.length > 0) throw invalid(violations);
    const giveBack = await this.creations.take(clientAddress);
    const createdAt = new Date();
    const route: RouteRow = { id: randomUUID(), createdAt, expiresAt: new Date(createdAt.getTime() + ttlSeconds * 1000), response, delayMs, verify };
    try {
      await this.repository.insertRoute(route);
    } catch (error) {
      await giveBack().catch(() => undefined);
      throw error;
    }
    this.routes.remember(route.id, route);
    return {
      routeId: route.id,
      url: `${baseUrl}/${route.id}`,
      inspectUrl: `${baseUrl}/inspect/${route.id}`,
      createdAt: route.createdAt.toISOString(),
      expiresAt: route.expiresAt.toISOString(),
    };
  }

  /**
   * The live route a sender is capturing on, or null: from the route cache, synchronously when its
   * entry is fresh (the common case under load), so a capture costs no query for the route.
   */
  routeForCapture(routeId: string): RouteRow | null | Promise<RouteRow | null> {
    return this.routes.lookup(routeId.toLowerCase());
  }

  /** The live route read from the database (never the cache: a page must not show a deleted route). */
  findLiveRoute(routeId: string): Promise<RouteRow | undefined> {
    return this.repository.findLiveRoute(routeId.toLowerCase());
  }

  /** Follows a route's captures as they are committed on any process; answers how to stop. */
  subscribe(routeId: string, subscriber: FeedSubscriber): () => void {
    return this.feed.subscribe(routeId, subscriber);
  }

  /** The highest sequence number stored for a route (0 without captures): where a live stream starts. */
  lastSeq(routeId: string): Promise<number> {
    return this.repository.lastSeq(routeId);
  }

  /**
   * Stores a capture (with its signature check when the route verifies signatures); resolves once
   * it is committed.
   */
  capture(record: CapturedRecord, route: RouteRow): Promise<CaptureOutcome> {
    if (route.verify) record.signature = verifySignature(route.verify, record);
    return this.writer.write(record);
  }

  /**
   * A slot for a delayed answer on this route, or null when the route already has
   * WEBHOOK_DELAY_CONCURRENCY delayed answers pending here (the sender then gets 429).
   */
  takeDelaySlot(routeId: string): (() => void) | null {
    return this.delays.take(routeId);
  }

  /**
   * One page of captures, newest first, filtered by `q` and `method`; bounded in rows and in bytes
   * (WEBHOOK_PAGE_BYTES; large bodies left out). `next` is the cursor for the older page, or null.
   * The page is produced as the client reads it (a chunk of captures at a time), and
   * one client address has at most WEBHOOK_READS_PER_ADDRESS pages and exports in flight: more are
   * refused with 429, so a client that never reads what it asked for costs bounded work.
   */
  async inspect(routeId: string, query: InspectQuery, clientAddress: string | undefined): Promise<ChunkedDocument<Inspection>> {
    return this.streamedRead(clientAddress, async () => {
      const route = await this.freshRoute(routeId);
      return this.inspectionChunks(route, await this.repository.planCaptures(route.id, this.captureQuery(query)));
    });
  }

  /**
   * A page of captures (as `inspect`, and bounded the same way) as a HAR 1.2 document, produced as
   * the client reads it, and the cursor of the next page (known before any body is read).
   */
  async exportHar(
    routeId: string,
    query: InspectQuery,
    origin: string,
    clientAddress: string | undefined,
  ): Promise<{ har: ChunkedDocument<Har>; next: string | null }> {
    let next: string | null = null;
    const har = await this.streamedRead<Har>(clientAddress, async () => {
      const route = await this.freshRoute(routeId);
      const plan = await this.repository.planCaptures(route.id, this.captureQuery(query));
      const last = plan.rows[plan.rows.length - 1];
      next = plan.more && last ? String(last.seq) : null;
      return this.harChunks(route.id, plan, origin);
    });
    return { har, next };
  }

  /**
   * Takes one of the client address's read slots (429 when they are all held), runs `start` (the
   * route lookup and the page plan, so their errors are ordinary answers) and hands the slot to the
   * streamed body, which gives it back however the reply ends.
   */
  private async streamedRead<Document>(clientAddress: string | undefined, start: () => Promise<AsyncIterable<string>>): Promise<ChunkedDocument<Document>> {
    const release = this.reads.take(clientKey(clientAddress));
    if (!release) {
      throw new AppError('resource_exhausted', `Too many pages in flight from this address; at most ${this.config.webhookReadsPerAddress} at once.`, {
        retryAfterSeconds: 1,
      });
    }
    try {
      return { chunks: await start(), done: release };
    } catch (error) {
      release();
      throw error;
    }
  }

  /**
   * The JSON text of an `Inspection`, a chunk of captures at a time: the same bytes as
   * `JSON.stringify` of the whole page. The page is cut on the exact JSON size of its items (the
   * plan bounded it by an estimate; a body of quotes or control characters grows up to 6× as JSON).
   */
  private async *inspectionChunks(route: RouteRow, plan: CapturePlan): AsyncGenerator<string> {
    const head = JSON.stringify({ routeId: route.id, createdAt: route.createdAt.toISOString(), expiresAt: route.expiresAt.toISOString() });
    yield `${head.slice(0, -1)},"items":[`;
    let bytes = 256;
    let count = 0;
    let cut = false;
    let lastSeq: number | undefined;
    for (const seqs of chunksOf(plan)) {
      let text = '';
      for (const capture of await this.repository.capturesOfPage(route.id, seqs)) {
        const json = JSON.stringify(await this.view(capture));
        const size = Buffer.byteLength(json) + 1;
        if (count > 0 && bytes + size > this.config.webhookPageBytes) {
          cut = true;
          break;
        }
        text += count === 0 ? json : `,${json}`;
        count++;
        bytes += size;
        lastSeq = capture.seq;
      }
      if (text !== '') yield text;
      if (cut) break;
    }
    yield `],"next":${JSON.stringify((plan.more || cut) && lastSeq !== undefined ? String(lastSeq) : null)}}`;
  }

  /** The JSON text of a HAR 1.2 document of a page's captures, a chunk at a time (as `harDocument`). */
  private async *harChunks(routeId: string, plan: CapturePlan, origin: string): AsyncGenerator<string> {
    const empty = JSON.stringify(harDocument([]));
    const at = empty.lastIndexOf('[]');
    yield empty.slice(0, at + 1);
    let first = true;
    for (const seqs of chunksOf(plan)) {
      const entries = (await this.repository.capturesOfPage(routeId, seqs)).map((capture) => JSON.stringify(toHarEntry(capture, origin, capture.bodyOmitted)));
      if (entries.length === 0) continue;
      yield `${first ? '' : ','}${entries.join(',')}`;
      first = false;
    }
    yield empty.slice(at + 1);
  }

  /** One capture as a HAR 1.2 document with one entry. */
  async captureHar(routeId: string, requestId: string, origin: string): Promise<Har> {
    return harDocument([toHarEntry(await this.getCapture(routeId, requestId), origin)]);
  }

  /** A curl command sending one capture again, to `target` (sub-path and query appended) or to where it was sent. */
  async captureCurl(routeId: string, requestId: string, origin: string, target: string | undefined): Promise<string> {
    const capture = await this.getCapture(routeId, requestId);
    let url = `${origin}${capture.path}${capture.query === '' ? '' : `?${capture.query}`}`;
    if (target !== undefined) {
      try {
        url = replayUrl(target, capture);
      } catch {
        throw invalid([{ field: 'url', message: 'must be an absolute http or https URL' }]);
      }
    }
    return toCurlCommand(capture, url);
  }

  /** The JSON view of a capture, with its multipart parts when its body is at hand. */
  async view(capture: StoredCapture): Promise<CapturedRequestView> {
    const multipart = capture.bodyOmitted || capture.truncated ? null : await parseMultipart(capture.body, capture.contentType);
    return describeCapturedRequest(capture, { bodyOmitted: capture.bodyOmitted, signature: capture.signature ?? null, multipart });
  }

  private captureQuery(query: InspectQuery): CaptureQuery {
    const beforeSeq = query.before === undefined ? undefined : Number(query.before);
    if (beforeSeq !== undefined && !Number.isSafeInteger(beforeSeq)) throw invalid([{ field: 'before', message: 'is not a cursor from this API' }]);
    return { limit: query.limit, beforeSeq, text: query.q, method: query.method, pageBytes: this.config.webhookPageBytes };
  }

  async getCapture(routeId: string, requestId: string): Promise<StoredCapture> {
    const route = await this.freshRoute(routeId);
    const capture = await this.repository.findCapture(route.id, requestId.toLowerCase());
    if (!capture) throw new AppError('not_found', 'No such captured request.');
    return capture;
  }

  async describeCapture(routeId: string, requestId: string): Promise<CapturedRequestView> {
    return this.view(await this.getCapture(routeId, requestId));
  }

  async deleteCapture(routeId: string, requestId: string): Promise<void> {
    const route = await this.freshRoute(routeId);
    if (!(await this.repository.deleteCapture(route.id, requestId.toLowerCase()))) throw new AppError('not_found', 'No such captured request.');
  }

  /** Deletes a route: this process stops capturing at once, others on the NOTIFY (or within the cache bound). */
  async deleteRoute(routeId: string): Promise<void> {
    const id = routeId.toLowerCase();
    const deleted = await this.repository.deleteRoute(id);
    this.routes.invalidate(id);
    if (!deleted) throw new AppError('not_found', 'No such route (it may have expired).');
  }

  /** Captures after a stream's Last-Event-ID, for a resuming event stream. */
  capturesAfter(routeId: string, afterSeq: number, limit: number): Promise<StoredCapture[]> {
    return this.repository.capturesAfter(routeId, afterSeq, limit);
  }

  /** Reads go to the database, not the cache: inspection must never show a deleted route. */
  private async freshRoute(routeId: string): Promise<RouteRow> {
    const route = await this.repository.findLiveRoute(routeId.toLowerCase());
    if (!route) throw new AppError('not_found', 'No such route (it may have expired).');
    return route;
  }
}

/** Estimated JSON bytes of one chunk of a page: the unit read from the database and written at a time. */
const PAGE_CHUNK_BYTES = 256 * 1024;

/** A plan's sequence numbers in chunks of about PAGE_CHUNK_BYTES (by its running estimate), at least one row each. */
function chunksOf(plan: CapturePlan): number[][] {
  const chunks: number[][] = [];
  let chunk: number[] = [];
  // The running estimate before the chunk's first row, and after the row before this one.
  let before = 0;
  let previous = 0;
  for (const row of plan.rows) {
    if (chunk.length > 0 && row.runningBytes - before > PAGE_CHUNK_BYTES) {
      chunks.push(chunk);
      chunk = [];
      before = previous;
    }
    chunk.push(row.seq);
    previous = row.runningBytes;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}

/**
 * The rules of a verification beyond the contract's bounds (checked before): a Standard Webhooks
 * secret's form, and a header only where the scheme has no header of its own.
 */
function checkedVerify(input: NonNullable<CreateRouteRequest['verify']>, violations: Violation[]): VerifyConfig | null {
  const scheme = SIGNATURE_SCHEMES.find((known) => known === input.scheme);
  if (scheme === 'standard-webhooks' && !/^(whsec_)?[A-Za-z0-9+/]+={0,2}$/.test(input.secret)) {
    violations.push({ field: 'verify.secret', message: 'must be a Standard Webhooks secret: whsec_ followed by base64' });
  }
  if (input.header !== undefined && scheme !== 'hmac-sha256')
    violations.push({ field: 'verify.header', message: `is only for hmac-sha256 (${scheme ?? 'this scheme'} uses its own header)` });
  if (!scheme) return null;
  const toleranceSeconds = input.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  return { scheme, secret: input.secret, header: scheme === 'hmac-sha256' ? (input.header ?? DEFAULT_HMAC_HEADER) : null, toleranceSeconds };
}

/** The rules of a route's response beyond the contract's bounds (checked before): which headers and Content-Types it may set. */
function checkedResponse(input: NonNullable<CreateRouteRequest['response']>, violations: Violation[]): RouteResponseConfig {
  const status = input.status ?? 200;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(input.headers ?? {})) {
    const field = `response.headers.${name}`;
    const lower = name.toLowerCase();
    if (!HEADER_NAME.test(name)) violations.push({ field, message: 'is not a valid header name' });
    else if (!((ROUTE_RESPONSE_HEADERS as readonly string[]).includes(lower) || (lower.startsWith('x-') && !DENIED_X_HEADERS.test(lower)))) {
      violations.push({ field, message: `${name} is not allowed on a route response (allowed: ${ROUTE_RESPONSE_HEADERS.join(', ')} and X-* custom headers)` });
    } else if (typeof value !== 'string' || !HEADER_VALUE.test(value)) violations.push({ field, message: 'must be single-line text' });
    else if (lower === 'content-type' && !ROUTE_CONTENT_TYPE.test(value.trim())) {
      violations.push({
        field,
        message: `${value} is not allowed as a route's Content-Type (JSON, XML, text/plain, text/csv, form or octet-stream; never HTML or SVG)`,
      });
    } else headers[name] = value;
  }
  return { status, headers, body: input.body ?? '' };
}

function invalid(violations: Violation[]): AppError {
  return new AppError('invalid_argument', 'Bad Request', { violations });
}
