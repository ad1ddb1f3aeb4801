/**
 * `npm run bench:grpc`: cloud.compute.v1.InstanceService/Get over native gRPC (h2c) through the whole
 * stack (auth, endpoint and error interceptors, the store read) against the fair baseline: a raw
 * @grpc/grpc-js server doing the same store read (bench/grpc-baselines.ts). Both are measured with
 * h2load in alternating runs and compared by their medians (target: full / baseline >= 0.70); exits 1
 * when the target is missed. A raw grpc-js and a bare connect-node server answering from memory are
 * measured once each, for reference. Servers run pinned to core 0, the load generator to core 1.
 *
 * BENCH_SECONDS (5) per run, BENCH_ROUNDS (5) alternating rounds; BENCH_PROFILE_DIR=<dir> writes CPU
 * profiles of the full server and the fair baseline (in <dir>/full and <dir>/baseline; the
 * largest file of each is the main thread's).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create, equals, toBinary } from '@bufbuild/protobuf';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { InstanceSchema, type Instance } from '../generated/proto/cloud/compute/v1/instance_pb.js';
import { GetInstanceRequestSchema, InstanceService } from '../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { OperationService } from '../generated/proto/cloud/common/v1/operation_service_pb.js';
import { ProjectService } from '../generated/proto/cloud/iam/v1/project_service_pb.js';
import { scratchDatabase } from '../scripts/support/fresh-store.js';
import { buildServer, compiledServerArgs } from './compiled-server.js';
import { processCpuMs } from './process-cpu.js';
import { median } from './users-read.js';

const ROOT = new URL('../', import.meta.url).pathname;
const ADMIN_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const TARGET = 0.7;

if (!existsSync('/usr/bin/h2load')) {
  console.error('bench:grpc needs h2load: apt-get install -y nghttp2-client');
  process.exit(2);
}

const progress = (line: string) => console.log(`[bench:grpc] ${line}`);
const database = await scratchDatabase(ADMIN_URL, 'bench_grpc');
const children: ChildProcess[] = [];
const scratch = mkdtempSync(join(tmpdir(), 'bench-grpc-'));
const buildDir = buildServer();
let missed = false;
try {
  const env = { ...process.env, DATABASE_URL: database.url, LOG_LEVEL: 'silent', PORT: '0', COMPUTE_WORK_MS: '10' };
  const profile = (name: string) => (process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${join(process.env.BENCH_PROFILE_DIR, name)}`] : []);
  progress('starting the full server');
  const full = await startChild([...profile('full'), ...compiledServerArgs(buildDir)], env);
  const token = await signIn(full.port);
  const headers = { authorization: `Bearer ${token}` };
  const transport = createGrpcTransport({ baseUrl: `http://127.0.0.1:${full.port}` });
  const instances = createClient(InstanceService, transport);
  const operations = createClient(OperationService, transport);
  progress('creating the instance to read');
  // The first start made a project named `default` under the installation's tenant.
  const project = await createClient(ProjectService, transport).getByName({ parentId: '', name: 'default' }, { headers });
  const operation = await instances.create(
    { metadata: { parentId: project.metadata!.id, name: 'bench-vm' }, spec: { description: 'benchmark instance', sshKeys: ['ssh-ed25519 AAAA bench'] } },
    { headers },
  );
  while (!(await operations.get({ id: operation.id }, { headers })).status) await new Promise((resolve) => setTimeout(resolve, 20));
  const instance = await instances.get({ id: operation.resourceId }, { headers });
  const instanceBase64 = Buffer.from(toBinary(InstanceSchema, instance)).toString('base64');

  progress('starting the baselines');
  const baselineEnv = { ...env, INSTANCE_BASE64: instanceBase64 };
  const fair = await startChild([...profile('baseline'), '--import', 'tsx', 'bench/grpc-baselines.ts'], { ...baselineEnv, BASELINE: 'grpc-js-store' });
  const grpcJs = await startChild(['--import', 'tsx', 'bench/grpc-baselines.ts'], { ...baselineEnv, BASELINE: 'grpc-js' });
  const connect = await startChild(['--import', 'tsx', 'bench/grpc-baselines.ts'], { ...baselineEnv, BASELINE: 'connect' });
  // Every server must answer the very same message before its throughput means anything (h2load
  // counts HTTP statuses, not gRPC ones).
  for (const [name, port] of [
    ['full stack', full.port],
    ['grpc-js + store', fair.port],
    ['grpc-js from memory', grpcJs.port],
    ['connect-node from memory', connect.port],
  ] as const) {
    await expectInstance(name, port, token, operation.resourceId, instance);
  }

  const message = toBinary(GetInstanceRequestSchema, create(GetInstanceRequestSchema, { id: operation.resourceId }));
  const envelope = Buffer.alloc(5 + message.length);
  envelope.writeUInt32BE(message.length, 1);
  envelope.set(message, 5);
  const bodyFile = join(scratch, 'get.bin');
  writeFileSync(bodyFile, envelope);
  /** Calls per second, and the server's CPU time per call (user + system, from /proc): steadier than throughput on a shared machine. */
  const measure = (server: Server, seconds: number) => {
    const before = processCpuMs(server.pid) * 1000;
    const { rate, calls } = h2load(server.port, bodyFile, token, seconds);
    return { rate, cpu: (processCpuMs(server.pid) * 1000 - before) / calls };
  };
  const load = (server: Server, seconds: number) => measure(server, seconds).rate;

  progress('warming up (JIT, pools)');
  for (const server of [fair, full]) load(server, 2);
  progress(`measuring: ${ROUNDS} alternating rounds of ${SECONDS} s`);
  const baselineRuns: number[] = [];
  const fullRuns: number[] = [];
  const baselineCpu: number[] = [];
  const fullCpu: number[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const base = measure(fair, SECONDS);
    const ours = measure(full, SECONDS);
    baselineRuns.push(base.rate);
    baselineCpu.push(base.cpu);
    fullRuns.push(ours.rate);
    fullCpu.push(ours.cpu);
    progress(
      `round ${round}/${ROUNDS}: grpc-js + store ${base.rate.toFixed(0)} req/s (${base.cpu.toFixed(0)} µs CPU/call), ` +
        `full stack ${ours.rate.toFixed(0)} req/s (${ours.cpu.toFixed(0)} µs CPU/call)`,
    );
  }
  progress('reference: the from-memory servers, one run each');
  load(grpcJs, 1);
  const grpcJsRate = load(grpcJs, SECONDS);
  load(connect, 1);
  const connectRate = load(connect, SECONDS);

  const baseline = median(baselineRuns);
  const ours = median(fullRuns);
  const ratio = ours / baseline;
  const runs = (values: number[]) => `(runs: ${values.map((value) => value.toFixed(0)).join(', ')})`;
  console.log(`raw grpc-js + store (fair baseline)  ${baseline.toFixed(0).padStart(7)} req/s   ${runs(baselineRuns)}`);
  console.log(`full stack                           ${ours.toFixed(0).padStart(7)} req/s   ${runs(fullRuns)}`);
  console.log(`server CPU per call (medians)        baseline ${median(baselineCpu).toFixed(0)} µs, full stack ${median(fullCpu).toFixed(0)} µs`);
  console.log(`raw grpc-js from memory              ${grpcJsRate.toFixed(0).padStart(7)} req/s   (reference)`);
  console.log(`bare connect-node from memory        ${connectRate.toFixed(0).padStart(7)} req/s   (reference)`);
  console.log(
    `ratio full / fair baseline           ${ratio.toFixed(2)}   (target >= ${TARGET.toFixed(2)}; medians of ${ROUNDS} alternating runs of ${SECONDS} s)`,
  );
  console.log(`full / grpc-js from memory           ${(ours / grpcJsRate).toFixed(2)}`);
  console.log(`full / connect-node from memory      ${(ours / connectRate).toFixed(2)}`);
  if (ratio < TARGET) {
    console.log(`MISSED: full / fair baseline ${ratio.toFixed(2)} < ${TARGET.toFixed(2)}`);
    missed = true;
  }
} finally {
  for (const child of children) child.kill('SIGTERM');
  // Give profiled children time to write their profiles.
  await new Promise((resolve) => setTimeout(resolve, process.env.BENCH_PROFILE_DIR ? 2000 : 300));
  await database.drop();
  rmSync(buildDir, { recursive: true, force: true });
  rmSync(scratch, { recursive: true, force: true });
}
process.exit(missed ? 1 : 0);

/** `seconds` of InstanceService.Get calls: calls per second and calls made; any failed or non-2xx call fails the run. */
function h2load(port: number, bodyFile: string, token: string, seconds: number): { rate: number; calls: number } {
  const output = execFileSync(
    'taskset',
    [
      '-c',
      '1',
      'h2load',
      '-D',
      String(seconds),
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
  const rate = /finished in [\d.]+m?s, ([\d.]+) req\/s/.exec(output)?.[1];
  const counts = /(\d+) succeeded, (\d+) failed, (\d+) errored/.exec(output);
  const statuses = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(output);
  if (!rate || !counts || counts[2] !== '0' || counts[3] !== '0' || !statuses || statuses.slice(2).some((count) => count !== '0')) {
    throw new Error(`not every call succeeded:\n${output}`);
  }
  return { rate: Number(rate), calls: Number(/(\d+) succeeded/.exec(output)?.[1] ?? 1) };
}

async function expectInstance(name: string, port: number, token: string, id: string, expected: Instance): Promise<void> {
  const client = createClient(InstanceService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` }));
  const answer = await client.get({ id }, { headers: { authorization: `Bearer ${token}` } });
  if (!equals(InstanceSchema, answer, expected)) throw new Error(`${name} answered another instance`);
}

interface Server {
  port: number;
  pid: number;
}

async function startChild(args: string[], env: NodeJS.ProcessEnv): Promise<Server> {
  const child = spawn('taskset', ['-c', '0', process.execPath, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening (\d+)/.exec(output);
      if (match) resolve({ port: Number(match[1]), pid: child.pid! });
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
