/**
 * The fleet test's load, in a process of its own (forked by scripts/fleet-test.ts) so its event loop
 * is not the orchestrator's: REST reads and writes and webhook captures through HAProxy's HTTP
 * frontend, gRPC unary calls over long-lived HTTP/2 connections through its L4 frontend, and one SSE
 * listener per phase that resumes with Last-Event-ID. Every request is tallied under the phase it
 * started in; acknowledged writes are remembered so the orchestrator can look for them in the database.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { OperationService } from '../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { InstanceService } from '../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { ProjectService } from '../../generated/proto/cloud/iam/v1/project_service_pb.js';
import { GrpcCallError, GrpcTestClient } from '../support/grpc.js';
import type { Command, LimitsResult, LoadTargets, PhaseResult, Report, Tally } from './messages.js';

function send(report: Report): void {
  process.send?.(report);
}

let targets: LoadTargets;
let phase = '';
const results = new Map<string, PhaseResult>();
let token = '';
let adminId = '';
let projectId = '';
let instanceId = '';
let running = false;
const loops: Promise<void>[] = [];
const listeners: SseListener[] = [];
let spread: { running: boolean; loops: Promise<void>[]; tally: Tally } | undefined;

process.on('message', (command: Command) => {
  handle(command).catch((error: unknown) => send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) }));
});

async function handle(command: Command): Promise<void> {
  switch (command.type) {
    case 'setup':
      targets = command.targets;
      await setup();
      return send({ type: 'ready' });
    case 'phase':
      phase = command.name;
      if (!running) startLoad();
      return;
    case 'stop-load':
      running = false;
      await Promise.all(loops.splice(0));
      return send({ type: 'stopped' });
    case 'settle':
      await settle(command.timeoutMs);
      return send({ type: 'settled', phases: Object.fromEntries(results) });
    case 'limits':
      return send({ type: 'limits', result: await limits() });
    case 'spread':
      startSpread(command.connections);
      return send({ type: 'spreading' });
    case 'stop-spread': {
      const current = spread;
      if (!current) return send({ type: 'spread-stopped', tally: newTally() });
      current.running = false;
      await Promise.all(current.loops);
      return send({ type: 'spread-stopped', tally: current.tally });
    }
    case 'exit':
      for (const listener of listeners) listener.stop();
      process.exit(0);
  }
}

const newTally = (): Tally => ({ ok: 0, failed: 0, examples: [] });

function tally(kind: string, outcome: true | string, into = results.get(phase)?.tallies): void {
  if (!into) return;
  const entry = (into[kind] ??= newTally());
  if (outcome === true) entry.ok++;
  else {
    entry.failed++;
    if (entry.examples.length < 5) entry.examples.push(`${new Date().toISOString()} ${outcome}`);
  }
}

const describe = (error: unknown): string =>
  error instanceof Error ? `${error.message}${error.cause instanceof Error ? ` (${error.cause.message})` : ''}` : String(error);

// ---- HTTP through HAProxy ------------------------------------------------------------------------

const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });

interface Answer {
  status: number;
  body: string;
}

function request(method: string, path: string, body?: unknown, options: { headers?: Record<string, string>; localAddress?: string } = {}): Promise<Answer> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: targets.httpPort,
        method,
        path,
        // A client with its own source address gets its own connection (no shared keep-alive pool).
        agent: options.localAddress ? false : agent,
        localAddress: options.localAddress,
        timeout: 30_000,
        headers: {
          ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...options.headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer within 30 s')));
    req.on('error', reject);
    req.end(payload);
  });
}

async function signIn(name: string, password: string, localAddress?: string): Promise<Answer> {
  return request('POST', '/api/auth', { name, password }, { localAddress, headers: { authorization: '' } });
}

// ---- gRPC through the L4 frontend ----------------------------------------------------------------

/**
 * One @grpc/grpc-js channel with a subchannel pool of its own: one long-lived HTTP/2 connection (grpc-js
 * shares one connection between channels to one address otherwise), reconnecting after a GOAWAY and
 * retrying a stream the server refused unprocessed (REFUSED_STREAM) transparently, as gRPC specifies.
 * connect-node (2.1) does not retry those: its calls fail `internal` when they race a GOAWAY.
 */
function rpcClient(): GrpcTestClient {
  return new GrpcTestClient(`http://127.0.0.1:${targets.grpcPort}`, { 'grpc.use_local_subchannel_pool': 1 });
}

const rpcOptions = (headers: Record<string, string> = {}) => ({ token, headers });

/** A call that has not ended after 30 s counts as failed, so a hung connection cannot stall the load. */
function bounded<T>(call: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => (timer = setTimeout(() => reject(new Error('no answer within 30 s')), 30_000)));
  return Promise.race([call, timeout]).finally(() => clearTimeout(timer));
}

async function setup(): Promise<void> {
  const signedIn = await signIn(targets.admin.name, targets.admin.password);
  if (signedIn.status !== 200) throw new Error(`admin sign-in through HAProxy answered ${signedIn.status}: ${signedIn.body}`);
  const session = JSON.parse(signedIn.body) as { accessToken: string; user: { id: string } };
  token = session.accessToken;
  adminId = session.user.id;
  const rpc = rpcClient();
  const project = await rpc.call(ProjectService.method.getByName, { parentId: '', name: 'default' }, rpcOptions());
  projectId = project.message.metadata?.id ?? '';
  const operation = (await rpc.call(InstanceService.method.create, { metadata: { parentId: projectId, name: 'fleet-read' } }, rpcOptions())).message;
  while (!(await rpc.call(OperationService.method.get, { id: operation.id }, rpcOptions())).message.status) await pause(50);
  instanceId = operation.resourceId;
  rpc.close();
  for (const name of targets.phases) {
    const created = await request('POST', '/routes', {});
    if (created.status !== 201) throw new Error(`POST /routes answered ${created.status}: ${created.body}`);
    const routeId = (JSON.parse(created.body) as { routeId: string }).routeId;
    results.set(name, {
      tallies: {},
      captures: [],
      users: [],
      operations: [],
      retriedKeys: 0,
      routeId,
      sse: { received: 0, lost: 0, duplicated: 0, reconnects: 0, examples: [] },
    });
    const listener = new SseListener(routeId);
    listeners.push(listener);
    await listener.opened;
  }
}

// ---- the mixed load ------------------------------------------------------------------------------

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `step` again and again (with `gapMs` between) until the load stops. */
function loop(gapMs: number, step: () => Promise<void>): void {
  loops.push(
    (async () => {
      while (running) {
        await step();
        await pause(gapMs);
      }
    })(),
  );
}

let counter = 0;

function startLoad(): void {
  running = true;
  for (let i = 0; i < 2; i++) {
    loop(10, async () => {
      const answer = await request('GET', `/api/users/${adminId}`).catch((error: unknown) => ({ status: 0, body: describe(error) }));
      tally('rest read', answer.status === 200 || `${answer.status} ${answer.body.slice(0, 200)}`);
    });
    loop(10, capture);
  }
  loop(150, async () => {
    const name = `fleet-user-${++counter}-${randomUUID().slice(0, 8)}`;
    const at = phase;
    const answer = await request('POST', '/api/users', { name, password: 'fleet-password-1', isAdmin: false }).catch((error: unknown) => ({
      status: 0,
      body: describe(error),
    }));
    tally('rest write', answer.status === 200 || `${answer.status} ${answer.body.slice(0, 200)}`);
    if (answer.status === 200) results.get(at)?.users.push((JSON.parse(answer.body) as { id: string }).id);
  });
  for (let i = 0; i < 2; i++) {
    const rpc = rpcClient();
    loop(10, async () => {
      try {
        await bounded(rpc.call(InstanceService.method.get, { id: instanceId }, rpcOptions()));
        tally('grpc get', true);
      } catch (error) {
        tally('grpc get', describe(error));
      }
    });
  }
  const creator = rpcClient();
  loop(100, () => createInstance(creator));
}

async function capture(): Promise<void> {
  const at = phase;
  const result = results.get(at);
  if (!result) return;
  const marker = `${at}-${++counter}`;
  const answer = await request('POST', `/${result.routeId}/fleet?n=${marker}`, { marker }).catch((error: unknown) => ({ status: 0, body: describe(error) }));
  tally('capture', answer.status === 200 || `${answer.status} ${answer.body.slice(0, 200)}`);
  if (answer.status === 200) result.captures.push({ id: (JSON.parse(answer.body) as { requestId: string }).requestId, marker });
}

/** The codes a careful client retries with the same idempotency key (the call may or may not have run). */
const RETRIED = [GrpcStatus.UNAVAILABLE, GrpcStatus.UNKNOWN, GrpcStatus.INTERNAL, GrpcStatus.DEADLINE_EXCEEDED, GrpcStatus.ABORTED];

/** Create with an idempotency key, retried with the same key after a failed attempt, as a careful client does. */
async function createInstance(rpc: GrpcTestClient): Promise<void> {
  const at = phase;
  const key = randomUUID();
  const name = `fleet-vm-${++counter}`;
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const operation = (
        await bounded(rpc.call(InstanceService.method.create, { metadata: { parentId: projectId, name } }, rpcOptions({ 'x-idempotency-key': key })))
      ).message;
      tally('grpc create', true);
      results.get(at)?.operations.push({ id: operation.id, resourceId: operation.resourceId });
      return;
    } catch (error) {
      tally('grpc create', describe(error));
      if (!(error instanceof GrpcCallError) || !RETRIED.includes(error.code)) return;
      const result = results.get(at);
      if (result && attempt === 0) result.retriedKeys++;
      await pause(200);
    }
  }
}

// ---- SSE -----------------------------------------------------------------------------------------

/** An EventSource as a browser or `cfs webhooks listen` runs it: reconnects after `retry:` and resumes by Last-Event-ID. */
class SseListener {
  readonly counts = new Map<string, number>();
  reconnects = 0;
  errors: string[] = [];
  opened: Promise<void>;
  private lastEventId = '';
  private retryMs = 100;
  private stopped = false;
  private current: http.ClientRequest | undefined;
  private markOpened: () => void = () => undefined;

  constructor(private readonly routeId: string) {
    this.opened = new Promise((resolve) => (this.markOpened = resolve));
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    this.current?.destroy();
  }

  private connect(): void {
    const req = http.get({
      host: '127.0.0.1',
      port: targets.httpPort,
      path: `/inspect/${this.routeId}/stream`,
      agent: false,
      headers: { accept: 'text/event-stream', ...(this.lastEventId ? { 'last-event-id': this.lastEventId } : {}) },
    });
    this.current = req;
    req.on('response', (res) => {
      if (res.statusCode !== 200) {
        this.note(`stream answered ${res.statusCode}`);
        res.resume();
        res.on('end', () => this.reconnect());
        return;
      }
      let buffer = '';
      let id: string | undefined;
      let data: string[] = [];
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let newline: number;
        while ((newline = buffer.indexOf('\n')) >= 0) {
          const line = buffer.slice(0, newline).replace(/\r$/, '');
          buffer = buffer.slice(newline + 1);
          if (line === '') {
            if (id !== undefined) this.lastEventId = id;
            if (data.length > 0) this.deliver(data.join('\n'));
            else if (id !== undefined) this.markOpened();
            id = undefined;
            data = [];
          } else if (line.startsWith('id:')) id = line.slice(3).trim();
          else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
          else if (line.startsWith('retry:')) this.retryMs = Math.min(1000, Number(line.slice(6).trim()) || this.retryMs);
        }
      });
      res.on('end', () => this.reconnect());
      res.on('error', () => this.reconnect());
    });
    req.on('error', (error) => {
      this.note(describe(error));
      this.reconnect();
    });
  }

  private deliver(json: string): void {
    const id = (JSON.parse(json) as { id: string }).id;
    this.counts.set(id, (this.counts.get(id) ?? 0) + 1);
  }

  private note(message: string): void {
    if (this.errors.length < 5) this.errors.push(`${new Date().toISOString()} ${message}`);
  }

  private reconnectScheduled = false;
  private reconnect(): void {
    if (this.stopped || this.reconnectScheduled) return;
    this.reconnectScheduled = true;
    this.reconnects++;
    setTimeout(() => {
      this.reconnectScheduled = false;
      this.connect();
    }, this.retryMs);
  }
}

/** Waits until every listener has every acknowledged capture of its route (or the time is up), then counts. */
async function settle(timeoutMs: number): Promise<void> {
  const started = Date.now();
  const missing = () =>
    [...results.values()].reduce((sum, result, index) => {
      const counts = listeners[index]?.counts ?? new Map<string, number>();
      return sum + result.captures.filter((capture) => !counts.has(capture.id)).length;
    }, 0);
  while (missing() > 0 && Date.now() - started < timeoutMs) await pause(100);
  [...results.values()].forEach((result, index) => {
    const listener = listeners[index];
    if (!listener) return;
    const lost = result.captures.filter((capture) => !listener.counts.has(capture.id));
    result.sse = {
      received: listener.counts.size,
      lost: lost.length,
      duplicated: [...listener.counts.values()].reduce((sum, count) => sum + count - 1, 0),
      reconnects: listener.reconnects,
      examples: [...listener.errors, ...lost.slice(0, 3).map((capture) => `never delivered: ${capture.id} (${capture.marker})`)],
    };
  });
}

// ---- per-client limits through HAProxy --------------------------------------------------------------

/**
 * One client (bound to 127.0.0.2) fails the sign-in of one name until it is throttled; another client
 * (127.0.0.3) then signs in to that name with the right password. With TRUST_PROXY the replicas count
 * each client by its own address (from X-Forwarded-For), so only the first is throttled.
 */
async function limits(): Promise<LimitsResult> {
  const name = `fleet-limits-${randomUUID().slice(0, 8)}`;
  const password = 'fleet-limits-password';
  const created = await request('POST', '/api/users', { name, password, isAdmin: false });
  if (created.status !== 200) throw new Error(`creating ${name} answered ${created.status}: ${created.body}`);
  const throttledStatuses: number[] = [];
  for (let i = 0; i <= targets.signInMaxFailures; i++) throttledStatuses.push((await signIn(name, 'wrong-password', '127.0.0.2')).status);
  const throttledCorrect = (await signIn(name, password, '127.0.0.2')).status;
  const otherCorrect = (await signIn(name, password, '127.0.0.3')).status;
  return { throttledStatuses, throttledCorrect, otherCorrect };
}

// ---- (d): gRPC spread after a scale-out ------------------------------------------------------------

function startSpread(connections: number): void {
  const state = { running: true, loops: [] as Promise<void>[], tally: newTally() };
  spread = state;
  for (let i = 0; i < connections; i++) {
    const rpc = rpcClient();
    state.loops.push(
      (async () => {
        while (state.running) {
          try {
            await bounded(rpc.call(InstanceService.method.get, { id: instanceId }, rpcOptions()));
            tally('grpc get', true, { 'grpc get': state.tally });
          } catch (error) {
            tally('grpc get', describe(error), { 'grpc get': state.tally });
          }
          await pause(40);
        }
      })(),
    );
  }
}
