import { randomUUID } from 'node:crypto';
import { readdirSync } from 'node:fs';
import type { DescFile } from '@bufbuild/protobuf';
import { createClient, type Transport } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import { InstanceService } from '../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { OperationService } from '../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { cloudJsonRegistry } from '../../src/handlers/cloud/json-registry.js';
import { PROJECT, startCloudServer, waitForOperation, type CloudServer } from '../modules/cloud/fixtures.js';

// JSON clients need the registry too, to read the Any fields of an Operation.
const jsonOptions = { registry: cloudJsonRegistry };

let cloud: CloudServer;
beforeAll(async () => {
  cloud = await startCloudServer();
});
afterAll(() => cloud?.close());

const PROTOCOLS: Array<[string, (baseUrl: string) => Transport, RegExp]> = [
  ['Connect JSON', (baseUrl) => createConnectTransport({ baseUrl, httpVersion: '1.1', useBinaryFormat: false, jsonOptions }), /^application\/json/],
  ['Connect binary', (baseUrl) => createConnectTransport({ baseUrl, httpVersion: '1.1', useBinaryFormat: true }), /^application\/proto$/],
  ['gRPC-Web binary', (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: '1.1', useBinaryFormat: true }), /^application\/grpc-web\+proto$/],
  ['gRPC-Web JSON', (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: '1.1', useBinaryFormat: false, jsonOptions }), /^application\/grpc-web\+json$/],
  ['gRPC (fast path)', (baseUrl) => createGrpcTransport({ baseUrl }), /^application\/grpc\+proto$/],
  ['gRPC JSON (connect-node)', (baseUrl) => createGrpcTransport({ baseUrl, useBinaryFormat: false, jsonOptions }), /^application\/grpc\+json$/],
];

describe.each(PROTOCOLS)('over %s', (name, transportFor, contentType) => {
  test('a mutation answers its Operation (with its Any fields), and an idempotent replay answers the same one with a Content-Type', async () => {
    const transport = transportFor(cloud.server.url);
    const instances = createClient(InstanceService, transport);
    const operations = createClient(OperationService, transport);
    const headers = { authorization: `Bearer ${cloud.admin.token}`, 'x-idempotency-key': randomUUID() };
    const request = { metadata: { parentId: PROJECT, name: `vm-${name.replace(/\W+/g, '-').toLowerCase()}` } };

    const seen: Headers[] = [];
    const first = await instances.create(request, { headers, onHeader: (header) => seen.push(header) });
    expect(first.id).toMatch(/^operation-/);
    expect(seen[0]?.get('content-type')).toMatch(contentType);

    const replay = await instances.create(request, { headers, onHeader: (header) => seen.push(header) });
    expect(replay.id).toBe(first.id);
    expect(seen[1]?.get('x-idempotent-replay')).toBe('true');
    expect(seen[1]?.get('content-type')).toMatch(contentType);

    await waitForOperation(cloud.grpc, cloud.admin.token, first.id);
    const done = await operations.get({ id: first.id }, { headers: { authorization: headers.authorization } });
    expect(done.status?.code).toBe(0);
    expect(done.request?.typeUrl).toMatch(/CreateInstanceRequest$/);
  });
});

test('the JSON registry holds every message of every generated cloud proto file', async () => {
  const root = new URL('../../generated/proto/cloud/', import.meta.url);
  const files = readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((path) => path.endsWith('_pb.ts'));
  expect(files.length).toBeGreaterThan(10);
  const missing: string[] = [];
  for (const path of files) {
    const module = (await import(new URL(path, root).href)) as Record<string, unknown>;
    for (const [name, value] of Object.entries(module)) {
      if (!name.startsWith('file_')) continue;
      for (const message of (value as DescFile).messages) {
        if (!cloudJsonRegistry.getMessage(message.typeName)) missing.push(message.typeName);
      }
    }
  }
  expect(missing).toEqual([]);
});
