import { InstanceService } from '../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { Health } from '../../generated/proto/grpc/health/v1/health_pb.js';
import { h2Request, startServer } from '../support/app.js';
import { PROJECT, startCloudServer, type CloudServer } from '../modules/cloud/fixtures.js';
import { createRoute, rawRequest } from '../modules/webhooks/support.js';
import { parseMetrics, scrape, valueOf } from './metrics-support.js';
import { budget } from '../support/budget.js';

let cloud: CloudServer;
beforeAll(async () => {
  // Instance work takes a minute: a created instance's operation stays open while the test scrapes.
  cloud = await startCloudServer({ COMPUTE_WORK_MS: '60000' });
}, budget(10_000));
afterAll(() => cloud?.close());

const requests = 'cfs_requests_total';

test('after traffic on every protocol, /metrics counts requests and latency per protocol and operation', async () => {
  const url = cloud.server.url;
  await cloud.server.request('GET', '/api');
  await cloud.server.request('GET', '/api/users/00000000-0000-0000-0000-000000000000', { token: cloud.admin.token });
  await h2Request(url, '/healthz');
  await cloud.grpc.call(Health.method.check, {});
  const connect = await fetch(`${url}/grpc.health.v1.Health/Check`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  expect(await connect.json()).toEqual({ status: 'SERVING' });
  const connectError = await fetch(`${url}/cloud.compute.v1.InstanceService/Get`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"id":"instance-none"}',
  });
  expect(connectError.status).toBe(401);
  // A made-up RPC path is counted, but under one label: clients cannot mint series.
  await fetch(`${url}/made.up.v1.Service/Method${Math.random().toString(36).slice(2)}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });

  const samples = await scrape(url);
  expect(valueOf(samples, requests, { protocol: 'http1', operation: 'GET /api', code: '200' })).toBeGreaterThanOrEqual(1);
  expect(valueOf(samples, requests, { protocol: 'http1', operation: 'GET /api/users/{id}', code: '404' })).toBe(1);
  expect(valueOf(samples, requests, { protocol: 'h2', operation: 'GET /healthz', code: '200' })).toBe(1);
  expect(valueOf(samples, requests, { protocol: 'grpc', operation: 'grpc.health.v1.Health/Check', code: 'OK' })).toBe(1);
  expect(valueOf(samples, requests, { protocol: 'connect', operation: 'grpc.health.v1.Health/Check', code: 'OK' })).toBe(1);
  expect(valueOf(samples, requests, { protocol: 'connect', operation: 'cloud.compute.v1.InstanceService/Get', code: 'UNAUTHENTICATED' })).toBe(1);
  expect(valueOf(samples, requests, { protocol: 'connect', operation: 'unmatched' })).toBe(1);
  expect(samples.some((sample) => sample.labels.operation?.startsWith('made.up'))).toBe(false);
  expect(valueOf(samples, 'cfs_request_duration_seconds_count', { protocol: 'grpc', operation: 'grpc.health.v1.Health/Check' })).toBe(1);
  expect(valueOf(samples, 'cfs_request_duration_seconds_bucket', { protocol: 'grpc', operation: 'grpc.health.v1.Health/Check', le: '+Inf' })).toBe(1);
  expect(valueOf(samples, 'cfs_request_duration_seconds_sum', { protocol: 'http1', operation: 'GET /api' })).toBeGreaterThan(0);
  // The process's own series come with it.
  expect(valueOf(samples, 'process_resident_memory_bytes')).toBeGreaterThan(0);
});

test('grpc-web calls are counted as grpc-web', async () => {
  const frame = Buffer.from([0, 0, 0, 0, 0]); // one empty HealthCheckRequest
  const response = await fetch(`${cloud.server.url}/grpc.health.v1.Health/Check`, {
    method: 'POST',
    headers: { 'content-type': 'application/grpc-web+proto', 'x-grpc-web': '1' },
    body: frame,
  });
  expect(response.status).toBe(200);
  await response.arrayBuffer();
  const samples = await scrape(cloud.server.url);
  expect(valueOf(samples, requests, { protocol: 'grpc-web', operation: 'grpc.health.v1.Health/Check', code: 'OK' })).toBe(1);
});

test('the operations queue depth counts open operations by state', async () => {
  const before = await scrape(cloud.server.url);
  const open = (samples: typeof before) =>
    (valueOf(samples, 'cfs_operations_open', { state: 'pending' }) ?? NaN) + (valueOf(samples, 'cfs_operations_open', { state: 'running' }) ?? NaN);
  expect(open(before)).toBe(0);
  await cloud.grpc.call(InstanceService.method.create, { metadata: { parentId: PROJECT, name: 'vm-metrics' } }, { token: cloud.admin.token });
  expect(open(await scrape(cloud.server.url))).toBe(1);
});

test('the database pool gauge reports connections by state', async () => {
  const samples = await scrape(cloud.server.url);
  const max = valueOf(samples, 'cfs_db_pool_connections', { state: 'max' });
  expect(max).toBe(cloud.server.app.db.kind === 'pglite' ? 1 : 5);
  for (const state of ['used', 'free', 'pending_acquire', 'pending_create'])
    expect(valueOf(samples, 'cfs_db_pool_connections', { state })).toBeGreaterThanOrEqual(0);
  // The scrape itself does not hold a connection once answered.
  expect(valueOf(samples, 'cfs_db_pool_connections', { state: 'pending_acquire' })).toBe(0);
});

test('webhook captures are written in batches whose sizes are observed', async () => {
  const { routeId } = await createRoute(cloud.server);
  // Sent together: the group commit puts concurrent captures into shared batches.
  await Promise.all(
    Array.from({ length: 20 }, (_, index) => rawRequest(`${cloud.server.url}/${routeId}`, 'POST', [['Content-Type', 'text/plain']], `capture ${index}`)),
  );
  const samples = await scrape(cloud.server.url);
  expect(valueOf(samples, 'cfs_webhook_capture_batch_size_sum')).toBe(20);
  const batches = valueOf(samples, 'cfs_webhook_capture_batch_size_count') ?? 0;
  expect(batches).toBeGreaterThanOrEqual(1);
  expect(batches).toBeLessThanOrEqual(20);
  expect(valueOf(samples, requests, { protocol: 'http1', operation: 'POST /{routeId}', code: '200' })).toBe(20);
});

test('HEAD /metrics answers the headers only; other methods are 405', async () => {
  const head = await fetch(`${cloud.server.url}/metrics`, { method: 'HEAD' });
  expect(head.status).toBe(200);
  expect(head.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const post = await fetch(`${cloud.server.url}/metrics`, { method: 'POST' });
  expect(post.status).toBe(405);
  expect(await post.json()).toEqual({ statusCode: 405, message: 'Method Not Allowed', error: 'Method Not Allowed' });
});

test(
  'with METRICS_TOKEN a scrape needs the bearer token; with METRICS_ENABLED=false there is no /metrics',
  async () => {
    const token = 'scrape-token-0123456789';
    const guarded = await startServer({ METRICS_TOKEN: token });
    const off = await startServer({ METRICS_ENABLED: 'false' });
    try {
      const refused = await fetch(`${guarded.url}/metrics`);
      expect(refused.status).toBe(401);
      expect(refused.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
      expect((await fetch(`${guarded.url}/metrics`, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status).toBe(401);
      const allowed = await fetch(`${guarded.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      expect(allowed.status).toBe(200);
      expect(parseMetrics(await allowed.text()).some((sample) => sample.name === 'cfs_db_pool_connections')).toBe(true);
      const absent = await fetch(`${off.url}/metrics`);
      expect(absent.status).toBe(404);
    } finally {
      await Promise.all([guarded.close(), off.close()]);
    }
  },
  budget(10_000),
);
