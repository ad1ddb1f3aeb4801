/**
 * `cfs webhooks …`: the webhook inspector from the command line (docs/webhooks.md).
 *
 *   cfs webhooks listen <route id or URL> --forward-to <url> [--since <capture id>]
 *   cfs webhooks replay <route id or URL> <capture id> --to <url>
 *
 * Both send captures client-side (the server never makes requests an anonymous caller chose): the
 * same method, the route's sub-path appended to the target path, the query, the header lines in
 * order with duplicates (hop-by-hop ones, Host and Content-Length recomputed), the stored body bytes.
 * `listen` follows the route's event stream and resumes from the last capture it delivered
 * (Last-Event-ID) after a dropped connection or a server restart, so each capture is forwarded once
 * while it runs; a target that is down is retried with backoff, and each failure is reported. Across
 * runs it keeps a checkpoint per route and target (a small state file, replaced atomically after
 * each delivery), so a listener restarted after a crash or a kill resumes after the last capture it
 * delivered: at least once, a capture forwarded in the instant before a kill (its answer received,
 * the checkpoint not yet written) being forwarded again on restart (docs/webhooks.md).
 */
import type { components } from '../../generated/openapi/webhooks.js';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { homedir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { isReplayedHeader, replayUrl } from '../engines/webhook-capture/index.js';

/** Where output goes, and how a test (or Ctrl-C) stops `listen`. */
export interface WebhooksCliIo {
  out(line: string): void;
  err(line: string): void;
  signal?: AbortSignal;
  /** Where `listen` keeps its checkpoints (default: $XDG_STATE_HOME/cfs, else ~/.local/state/cfs). */
  stateDir?: string;
}

const USAGE = `Usage:
  cfs webhooks listen <route id or URL> --forward-to <url> [--since <capture id>] [--server URL]
      Forwards every new capture of the route to <url> (sub-path and query appended), one line
      per delivery; resumes after a disconnect or a server restart, and a listener started again
      resumes after the last capture delivered to <url> (a checkpoint in $XDG_STATE_HOME/cfs).
      --since starts after an earlier capture (the ones after it are forwarded, not it). Stop with
      Ctrl-C.
  cfs webhooks replay <route id or URL> <capture id> --to <url> [--server URL]
      Sends one capture to <url> the same way and prints the target's status.

A route URL (http://host/<id> or http://host/inspect/<id>) names its server; with a bare route id the
server is --server, env CFS_SERVER, or http://localhost:8080.`;

const UUID = /[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}/;
const RETRY_MIN_MS = 500;
const RETRY_MAX_MS = 30_000;

class UsageError extends Error {}

/** The fields of a captured request a forward needs (contracts/openapi/webhooks.yaml CapturedRequest). */
type Capture = Pick<
  components['schemas']['CapturedRequest'],
  'id' | 'routeId' | 'method' | 'path' | 'query' | 'headers' | 'bodyBase64' | 'bodyOmitted' | 'truncated' | 'links'
>;

/** Runs `cfs webhooks <argv>`; answers the exit code. */
export async function webhooksCommand(argv: string[], io: WebhooksCliIo = processIo()): Promise<number> {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        server: { type: 'string' },
        'forward-to': { type: 'string' },
        to: { type: 'string' },
        since: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
    const [command, routeArg, captureId] = positionals;
    if (values.help || command === undefined) {
      io.out(USAGE);
      return values.help ? 0 : 2;
    }
    if (routeArg === undefined) throw new UsageError('a route id or URL is required');
    const route = routeOf(routeArg, values.server ?? process.env.CFS_SERVER ?? 'http://localhost:8080');
    if (command === 'listen') {
      const target = targetOf(values['forward-to'], '--forward-to');
      return await listen(route, target, values.since, io);
    }
    if (command === 'replay') {
      if (captureId === undefined || !UUID.test(captureId))
        throw new UsageError('a capture id is required: cfs webhooks replay <route> <capture id> --to <url>');
      const target = targetOf(values.to, '--to');
      const capture = await getJson<Capture>(`${route.server}/inspect/${route.id}/requests/${captureId}`);
      const line = await deliver(route, capture, target, io, false);
      return line.status >= 200 && line.status < 400 ? 0 : 1;
    }
    throw new UsageError(`unknown command "webhooks ${command}" (listen, replay)`);
  } catch (error) {
    if (error instanceof UsageError || String((error as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS')) {
      io.err(`cfs: ${(error as Error).message}`);
      return 2;
    }
    io.err(`cfs: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}

function processIo(): WebhooksCliIo {
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort());
  return { out: (line) => process.stdout.write(`${line}\n`), err: (line) => process.stderr.write(`${line}\n`), signal: controller.signal };
}

interface RouteRef {
  server: string;
  id: string;
}

function routeOf(arg: string, server: string): RouteRef {
  if (/^https?:\/\//i.test(arg)) {
    const url = new URL(arg);
    const id = UUID.exec(url.pathname)?.[0];
    if (!id) throw new UsageError(`no route id in ${arg}`);
    return { server: url.origin, id: id.toLowerCase() };
  }
  if (!UUID.test(arg) || arg.length !== 36) throw new UsageError(`"${arg}" is neither a route id nor a route URL`);
  return { server: server.replace(/\/+$/, ''), id: arg.toLowerCase() };
}

function targetOf(value: string | undefined, flag: string): string {
  if (value === undefined) throw new UsageError(`${flag} <url> is required`);
  if (!/^https?:\/\//i.test(value)) throw new UsageError(`${flag} must be an http or https URL`);
  return value;
}

/**
 * Follows the route's event stream and forwards each capture in order. `cursor` is the sequence
 * number of the last capture delivered (or where the stream started): it only moves after a
 * delivery, and every reconnection asks for what came after it.
 */
async function listen(route: RouteRef, target: string, since: string | undefined, io: WebhooksCliIo): Promise<number> {
  const checkpoint = new Checkpoint(io, route, target);
  // --since: the stream starts just before the named capture, which is skipped (it may be gone: then nothing is).
  let skip = since === undefined ? undefined : since.toLowerCase();
  let cursor = since === undefined ? checkpoint.read() : await cursorBefore(route, since);
  const from = since !== undefined ? ` after ${since}` : cursor !== undefined ? ` resuming after ${cursor} (${checkpoint.file})` : '';
  // Only once the stream is open (its first event): a capture sent after this line is never missed.
  let announced = false;
  const announce = () => {
    if (!announced) io.err(`forwarding captures of ${route.server}/${route.id} to ${target}${from} (Ctrl-C to stop)`);
    announced = true;
  };
  let failures = 0;
  while (!io.signal?.aborted) {
    let outcome: 'ended' | 'gone';
    try {
      outcome = await followStream(
        route,
        cursor,
        io,
        async (seq, capture) => {
          announce();
          if (cursor !== undefined && seq <= cursor) return; // replayed after a reconnect, already delivered
          const named = skip !== undefined && capture.id === skip;
          skip = undefined;
          if (!named) await deliver(route, capture, target, io, true);
          cursor = seq;
          checkpoint.write(seq, capture.id);
          failures = 0;
        },
        (start) => {
          announce();
          if (cursor === undefined) {
            // A fresh listener starts now; from here on, a restart resumes here.
            cursor = start;
            checkpoint.write(start);
          }
          failures = 0;
        },
      );
    } catch (error) {
      if (io.signal?.aborted) break;
      outcome = 'ended';
      io.err(`event stream: ${describeError(error)}`);
    }
    if (outcome === 'gone') {
      io.err(`the route ${route.id} is gone (deleted or expired)`);
      return 1;
    }
    if (io.signal?.aborted) break;
    const wait = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** failures++);
    io.err(`reconnecting in ${wait} ms${cursor === undefined ? '' : ` (resuming after ${cursor})`}`);
    await sleep(wait, io.signal);
  }
  return 0;
}

/**
 * One connection to the event stream: answers 'gone' when the route no longer exists, 'ended' when
 * the connection ended (server restart, network), throws on failures to connect.
 */
async function followStream(
  route: RouteRef,
  cursor: number | undefined,
  io: WebhooksCliIo,
  onCapture: (seq: number, capture: Capture) => Promise<void>,
  onStart: (seq: number) => void,
): Promise<'ended' | 'gone'> {
  const headers: Record<string, string> = { accept: 'text/event-stream' };
  if (cursor !== undefined) headers['last-event-id'] = String(cursor);
  const response = await fetch(`${route.server}/inspect/${route.id}/stream`, { headers, signal: io.signal });
  if (response.status === 404) return 'gone';
  if (response.status !== 200 || !response.body) throw new Error(`the server answered ${response.status}`);
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of response.body) {
    buffer += decoder.decode(chunk as Uint8Array, { stream: true });
    let end: number;
    while ((end = buffer.search(/\r?\n\r?\n/)) !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
      const lines = block.split(/\r?\n/);
      const id = lines
        .find((line) => line.startsWith('id:'))
        ?.slice(3)
        .trim();
      const data = lines.filter((line) => line.startsWith('data:')).map((line) => line.slice(5).replace(/^ /, ''));
      const seq = id === undefined ? NaN : Number(id);
      if (!Number.isSafeInteger(seq)) continue;
      if (data.length === 0) onStart(seq);
      else await onCapture(seq, JSON.parse(data.join('\n')) as Capture);
    }
  }
  return 'ended';
}

/**
 * The last capture `listen` delivered from a route to a target, kept across runs in
 * `<state dir>/webhooks/<route id>-<hash of server, route and target>.json`. Each write replaces the
 * file through a rename, so a listener killed at any moment leaves the old checkpoint or the new one.
 */
class Checkpoint {
  readonly file: string;

  constructor(
    private readonly io: WebhooksCliIo,
    private readonly route: RouteRef,
    private readonly target: string,
  ) {
    const dir = io.stateDir ?? join(process.env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'cfs');
    const hash = createHash('sha256')
      .update(JSON.stringify([route.server, route.id, target]))
      .digest('hex')
      .slice(0, 16);
    this.file = join(dir, 'webhooks', `${route.id}-${hash}.json`);
  }

  /** The sequence number delivered last, or undefined: none yet (or an unreadable file, reported). */
  read(): number | undefined {
    this.sweepAbandonedWrites();
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch (error) {
      if ((error as { code?: string }).code !== 'ENOENT') this.io.err(`checkpoint ${this.file}: ${describeError(error)}; starting from now`);
      return undefined;
    }
    try {
      const { cursor } = JSON.parse(text) as { cursor?: unknown };
      if (typeof cursor === 'number' && Number.isSafeInteger(cursor) && cursor >= 0) return cursor;
    } catch {
      // reported below
    }
    this.io.err(`checkpoint ${this.file} is not a checkpoint; starting from now`);
    return undefined;
  }

  write(cursor: number, captureId?: string): void {
    const { server, id } = this.route;
    const body = JSON.stringify({ server, routeId: id, target: this.target, cursor, captureId, updatedAt: new Date().toISOString() });
    const temporary = `${this.file}.${process.pid}.tmp`;
    mkdirSync(join(this.file, '..'), { recursive: true, mode: 0o700 });
    writeFileSync(temporary, `${body}\n`, { mode: 0o600 });
    renameSync(temporary, this.file);
  }

  /** Removes `<file>.<pid>.tmp` left by a listener killed between its write and its rename (the pid has exited). */
  private sweepAbandonedWrites(): void {
    const dir = dirname(this.file);
    const prefix = `${basename(this.file)}.`;
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      const pid = Number(/^(\d+)\.tmp$/.exec(name.startsWith(prefix) ? name.slice(prefix.length) : '')?.[1]);
      if (!Number.isSafeInteger(pid) || pid === process.pid || processIsAlive(pid)) continue;
      try {
        unlinkSync(join(dir, name));
      } catch {
        // another listener removed it first
      }
    }
  }
}

function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === 'EPERM';
  }
}

/** The cursor just before capture `since`, so a stream resuming from it replays that capture first. */
async function cursorBefore(route: RouteRef, since: string): Promise<number> {
  if (!UUID.test(since)) throw new UsageError('--since must be a capture id');
  // Pages are newest first and their cursor is the last item's position: walk one item at a time.
  let before: string | null = null;
  for (;;) {
    const page: { items: Array<{ id: string }>; next: string | null } = await getJson(
      `${route.server}/inspect/${route.id}?limit=1${before === null ? '' : `&before=${before}`}`,
    );
    const [item] = page.items;
    if (!item) throw new UsageError(`no capture ${since} on this route`);
    if (item.id === since.toLowerCase()) return page.next === null ? 0 : Number(page.next) - 1;
    if (page.next === null) throw new UsageError(`no capture ${since} on this route`);
    before = page.next;
  }
}

/**
 * Sends one capture to `target` and prints its line. When `retry`, a target that cannot be reached
 * is tried again with backoff until it answers (or the listener is stopped); each failure is printed.
 */
async function deliver(route: RouteRef, capture: Capture, target: string, io: WebhooksCliIo, retry: boolean): Promise<{ status: number }> {
  const body = capture.bodyOmitted ? await getBytes(`${route.server}${capture.links.raw}`) : Buffer.from(capture.bodyBase64, 'base64');
  const url = replayUrl(target, capture);
  for (let attempt = 0; ; attempt++) {
    const started = performance.now();
    try {
      const status = await send(url, capture, body, io.signal);
      const ms = Math.round(performance.now() - started);
      io.out(
        `${capture.id} ${capture.method} ${capture.path}${capture.query ? `?${capture.query}` : ''} -> ${status} ${ms}ms${capture.truncated ? ' (body truncated when captured)' : ''}`,
      );
      return { status };
    } catch (error) {
      if (!retry || io.signal?.aborted) throw error;
      const wait = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** attempt);
      io.err(`${capture.id} ${capture.method} ${capture.path}: target ${url} unreachable (${describeError(error)}), retrying in ${wait} ms`);
      await sleep(wait, io.signal);
      if (io.signal?.aborted) throw error;
    }
  }
}

/** One request with the captured header lines in order (raw list: duplicates and case kept). */
function send(url: string, capture: Capture, body: Buffer, signal: AbortSignal | undefined): Promise<number> {
  const target = new URL(url);
  const lines: string[] = ['Host', target.host];
  for (const [name = '', value = ''] of capture.headers) if (isReplayedHeader(name)) lines.push(name, value);
  if (body.length > 0 || capture.headers.some(([name = '']) => /^(content-length|transfer-encoding)$/i.test(name)))
    lines.push('Content-Length', String(body.length));
  const client = target.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const request = client.request(url, { method: capture.method, headers: lines, agent: false, signal }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}

async function getJson<T>(url: string): Promise<T> {
  const response = await fetch(url, { headers: { accept: 'application/json' } });
  if (!response.ok) throw new Error(`${url} answered ${response.status}: ${(await response.text()).slice(0, 200)}`);
  return (await response.json()) as T;
}

async function getBytes(url: string): Promise<Buffer> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  return Buffer.from(await response.arrayBuffer());
}

function describeError(error: unknown): string {
  const cause = (error as { cause?: { code?: string } }).cause;
  return cause?.code ?? (error as { code?: string }).code ?? (error instanceof Error ? error.message : String(error));
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
