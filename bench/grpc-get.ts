/**
 * `npm run bench:grpc`: cloud.compute.v1.InstanceService/Get over native gRPC (h2c) through the whole
 * stack (auth, endpoint and error interceptors, store) against a bare connect-node server and a raw
 * @grpc/grpc-js server answering the same message from memory, measured in one run with h2load.
 * Servers run pinned to core 0, the load generator to core 1.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create, toBinary } from '@bufbuild/protobuf';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { InstanceSchema } from '../generated/proto/cloud/compute/v1/instance_pb.js';
import { GetInstanceRequestSchema, InstanceService } from '../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { OperationService } from '../generated/proto/cloud/common/v1/operation_service_pb.js';
import { ProjectService } from '../generated/proto/cloud/iam/v1/project_service_pb.js';
import { scratchDatabase } from '../scripts/support/fresh-store.js';

const ROOT = new URL('../', import.meta.url).pathname;
const ADMIN_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 40000);

if (!existsSync('/usr/bin/h2load')) {
  console.error('bench:grpc needs h2load: apt-get install -y nghttp2-client');
  process.exit(2);
}

const database = await scratchDatabase(ADMIN_URL, 'bench_grpc');
const children: ChildProcess[] = [];
const scratch = mkdtempSync(join(tmpdir(), 'bench-grpc-'));
try {
  const env = { ...process.env, DATABASE_URL: database.url, LOG_LEVEL: 'silent', PORT: '0', COMPUTE_WORK_MS: '10' };
  // BENCH_PROFILE_DIR=<dir> writes a CPU profile of the full server (profile before optimising).
  const profile = process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : [];
  const full = await startChild([...profile, '--import', 'tsx', 'bench/full-server.ts'], env);
  const token = await signIn(full.port);
  const baseUrl = `http://127.0.0.1:${full.port}`;
  const transport = createGrpcTransport({ baseUrl });
  const headers = { authorization: `Bearer ${token}` };
  const instances = createClient(InstanceService, transport);
  const operations = createClient(OperationService, transport);
  // The first start made a project named `default` under the installation's tenant.
  const project = await createClient(ProjectService, transport).getByName({ parentId: '', name: 'default' }, { headers });
  const operation = await instances.create(
    { metadata: { parentId: project.metadata!.id, name: 'bench-vm' }, spec: { description: 'benchmark instance', sshKeys: ['ssh-ed25519 AAAA bench'] } },
    { headers },
  );
  while (!(await operations.get({ id: operation.id }, { headers })).status) await new Promise((resolve) => setTimeout(resolve, 20));
  const instance = await instances.get({ id: operation.resourceId }, { headers });
  const instanceBase64 = Buffer.from(toBinary(InstanceSchema, instance)).toString('base64');

  const connect = await startChild(['--import', 'tsx', 'bench/grpc-baselines.ts'], { ...env, BASELINE: 'connect', INSTANCE_BASE64: instanceBase64 });
  const grpcJs = await startChild(['--import', 'tsx', 'bench/grpc-baselines.ts'], { ...env, BASELINE: 'grpc-js', INSTANCE_BASE64: instanceBase64 });

  const message = toBinary(GetInstanceRequestSchema, create(GetInstanceRequestSchema, { id: operation.resourceId }));
  const envelope = Buffer.alloc(5 + message.length);
  envelope.writeUInt32BE(message.length, 1);
  envelope.set(message, 5);
  const bodyFile = join(scratch, 'get.bin');
  writeFileSync(bodyFile, envelope);

  const results: Array<[string, number]> = [];
  for (const [name, port] of [
    ['raw @grpc/grpc-js', grpcJs.port],
    ['bare connect-node', connect.port],
    ['full stack', full.port],
  ] as const) {
    h2load(port, bodyFile, token, 4000);
    results.push([name, h2load(port, bodyFile, token, REQUESTS)]);
  }
  const rate = Object.fromEntries(results);
  for (const [name, value] of results) console.log(`${name.padEnd(20)} ${value.toFixed(0).padStart(7)} req/s`);
  console.log(`full / bare connect-node  ${(rate['full stack']! / rate['bare connect-node']!).toFixed(2)}   (target >= 0.50)`);
  console.log(`full / raw grpc-js        ${(rate['full stack']! / rate['raw @grpc/grpc-js']!).toFixed(2)}   (target toward 0.50)`);
  console.log(`connect-node / grpc-js    ${(rate['bare connect-node']! / rate['raw @grpc/grpc-js']!).toFixed(2)}`);
} finally {
  for (const child of children) child.kill('SIGTERM');
  await new Promise((resolve) => setTimeout(resolve, 300));
  await database.drop();
}

function h2load(port: number, bodyFile: string, token: string, requests: number): number {
  const output = execFileSync(
    'taskset',
    [
      '-c',
      '1',
      'h2load',
      '-n',
      String(requests),
      '-c',
      '4',
      '-m',
      '16',
      '-H',
      'content-type: application/grpc',
      '-H',
      'te: trailers',
      '-H',
      `authorization: Bearer ${token}`,
      '-d',
      bodyFile,
      `http://127.0.0.1:${port}/cloud.compute.v1.InstanceService/Get`,
    ],
    { encoding: 'utf8' },
  );
  const match = /finished in [\d.]+m?s, ([\d.]+) req\/s/.exec(output);
  const succeeded = /(\d+) succeeded/.exec(output)?.[1];
  if (Number(succeeded) !== requests) throw new Error(`not every call succeeded:\n${output}`);
  return Number(match?.[1] ?? 0);
}

async function startChild(args: string[], env: NodeJS.ProcessEnv): Promise<{ port: number }> {
  const child = spawn('taskset', ['-c', '0', process.execPath, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening (\d+)/.exec(output);
      if (match) resolve({ port: Number(match[1]) });
    });
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}`)));
  });
}

async function signIn(port: number): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${port}/api/auth`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench-admin', password: 'bench-password' }),
  });
  return ((await response.json()) as { accessToken: string }).accessToken;
}
