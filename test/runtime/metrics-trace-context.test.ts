import { Health } from '../../generated/proto/grpc/health/v1/health_pb.js';
import { build, type App } from '../../src/server/build.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { parseTraceparent } from '../../src/server/trace-context.js';
import { openTestDatabase } from '../support/app.js';
import { GrpcTestClient } from '../support/grpc.js';
import { exchangeForm } from '../modules/iam/support.js';
import { budget } from '../support/budget.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

describe('parseTraceparent', () => {
  test.each([
    ['a version 00 header', `00-${TRACE}-${PARENT}-01`, { traceId: TRACE, parentSpanId: PARENT, flags: '01' }],
    ['a future version with more fields', `cc-${TRACE}-${PARENT}-01-what-the-future-holds`, { traceId: TRACE, parentSpanId: PARENT, flags: '01' }],
    ['version ff', `ff-${TRACE}-${PARENT}-01`, undefined],
    ['version 00 with a fifth field', `00-${TRACE}-${PARENT}-01-extra`, undefined],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${PARENT}-01`, undefined],
    ['an all-zero parent id', `00-${TRACE}-${'0'.repeat(16)}-01`, undefined],
    ['uppercase hex', `00-${TRACE.toUpperCase()}-${PARENT}-01`, undefined],
    ['a short trace id', `00-${TRACE.slice(1)}-${PARENT}-01`, undefined],
    ['several headers', [`00-${TRACE}-${PARENT}-01`, `00-${TRACE}-${PARENT}-01`], undefined],
    ['no header', undefined, undefined],
  ])('%s', (_name, given, want) => {
    expect(parseTraceparent(given)).toEqual(want);
  });
});

describe('through the server', () => {
  const lines: Array<Record<string, unknown>> = [];
  let app: App;
  let url: string;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const database = await openTestDatabase();
    drop = database.drop;
    const logger = createLogger('info', { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    app = await build(loadConfig({ MIGRATE: 'false', SHUTDOWN_GRACE_MS: '300' }), { database: database.db, logger });
    url = `http://127.0.0.1:${await app.listen(0, '127.0.0.1')}`;
  }, budget(10_000));
  afterAll(async () => {
    await app?.close();
    await drop?.();
  });

  test("a request joins the caller's trace: a new span on the response, the ids on every log line it writes", async () => {
    const refused = await fetch(`${url}/oauth2/token/exchange`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', traceparent: `00-${TRACE}-${PARENT}-01`, 'x-request-id': 'trace-test-1' },
      body: new URLSearchParams(exchangeForm('not-a-jwt')).toString(),
    });
    expect(refused.status).toBe(400);
    const answered = parseTraceparent(refused.headers.get('traceparent') ?? undefined);
    expect(answered).toEqual({ traceId: TRACE, parentSpanId: expect.stringMatching(/^[0-9a-f]{16}$/), flags: '01' });
    expect(answered?.parentSpanId).not.toBe(PARENT);
    const spanId = answered?.parentSpanId;
    const ofRequest = lines.filter((line) => line.trace_id === TRACE);
    // The service's own line (written deep in the exchange) and the request line share the ids.
    expect(ofRequest.map((line) => line.msg).sort()).toEqual(['request', 'token exchange refused']);
    for (const line of ofRequest) expect(line).toMatchObject({ trace_id: TRACE, span_id: spanId, parent_span_id: PARENT });
    expect(ofRequest.find((line) => line.msg === 'request')).toMatchObject({ requestId: 'trace-test-1', status: 400 });
  });

  test('without a valid traceparent a new trace starts (not sampled), and lines outside requests carry none', async () => {
    for (const traceparent of [undefined, `00-${'0'.repeat(32)}-${PARENT}-01`]) {
      const headers: Record<string, string> = traceparent ? { traceparent } : {};
      const answer = await fetch(`${url}/healthz`, { headers });
      const started = parseTraceparent(answer.headers.get('traceparent') ?? undefined);
      expect(started?.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(started?.traceId).not.toBe('0'.repeat(32));
      expect(started?.flags).toBe('00');
      expect(lines.find((line) => line.msg === 'request' && line.trace_id === started?.traceId)).toMatchObject({
        route: '/healthz',
        span_id: started?.parentSpanId,
      });
    }
    app.logger.info('outside any request');
    expect(lines.at(-1)).not.toHaveProperty('trace_id');
  });

  test('native gRPC calls (the fast path) answer a traceparent of the same trace too', async () => {
    const client = new GrpcTestClient(url);
    try {
      const { headers } = await client.call(Health.method.check, {}, { headers: { traceparent: `00-${TRACE}-${PARENT}-00` } });
      const answered = parseTraceparent(String(headers.get('traceparent')[0]));
      expect(answered).toMatchObject({ traceId: TRACE, flags: '00' });
      expect(lines.find((line) => line.msg === 'request' && line.route === '/grpc.health.v1.Health/Check')).toMatchObject({
        trace_id: TRACE,
        span_id: answered?.parentSpanId,
        grpcStatus: 0,
      });
    } finally {
      client.close();
    }
  });
});
