/**
 * The SDK layer (src/sdk) against the live server, with faults injected by a per-attempt
 * interceptor (it runs inside the retry loop, after the real server answered or before it is asked).
 */
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import { Http2SessionManager, createGrpcTransport } from '@connectrpc/connect-node';
import { InstanceService } from '../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { ProfileService } from '../../generated/proto/cloud/iam/v1/profile_service_pb.js';
import { AuthPublicKeyService } from '../../generated/proto/cloud/iam/v1/auth_public_key_service_pb.js';
import { AppError } from '../../src/errors.js';
import { encodeStatus, Operations } from '../../src/engines/operations/index.js';
import { toRpcStatus } from '../../src/handlers/cloud/errors.js';
import {
  createCloudSdk,
  OperationError,
  requestIdOf,
  serviceErrorsOf,
  ServiceAccountCredentials,
  type CloudSdkOptions,
  type RetryOptions,
} from '../../src/sdk/index.js';
import { startServer, type TestServer } from '../support/app.js';
import { GrpcTestClient } from '../support/grpc.js';
import { createProject, createServiceAccountWithKey, type ServiceAccountKey } from '../modules/iam/support.js';

const ADMIN = { name: 'sdk-admin', password: 'sdk-admin-password' };
/** Short-lived service-account tokens, so a test run sees them expire and be refreshed. */
const IAM_TOKEN_TTL_SECONDS = 6;
/**
 * The server's `exp` is in whole seconds, so a token may expire up to 1 s before `expires_in`
 * counted from the request says; with tokens this short, the tests refresh at half their lifetime
 * (the default 90% is meant for hours-long tokens), so no call meets an expired one.
 */
const LIFETIME = 0.5;
const keyFile = () => ({ id: key.keyId, service_account_id: key.serviceAccountId, private_key: key.privateKey });

let server: TestServer | undefined;
let grpc: GrpcTestClient | undefined;
let projectId: string;
let key: ServiceAccountKey;
const sessions: Http2SessionManager[] = [];

beforeAll(async () => {
  server = await startServer({
    ADMIN_USERNAME: ADMIN.name,
    ADMIN_PASSWORD: ADMIN.password,
    COMPUTE_WORK_MS: '300',
    IAM_TOKEN_TTL: String(IAM_TOKEN_TTL_SECONDS),
  });
  grpc = new GrpcTestClient(server.url);
  const signIn = await server.request('POST', '/api/auth', { body: ADMIN });
  const admin = signIn.body.accessToken as string;
  projectId = await createProject(grpc, admin, 'sdk-project');
  key = await createServiceAccountWithKey(grpc, admin, projectId, 'sdk-robot');
});
afterAll(async () => {
  for (const session of sessions) session.abort();
  grpc?.close();
  await server?.close();
});

/** An SDK signed in as the test's service account (its key file), with per-attempt interceptors. */
function sdkWith(options: { interceptors?: Interceptor[]; retry?: RetryOptions; credentials?: CloudSdkOptions['credentials'] } = {}) {
  const sessionManager = new Http2SessionManager(server?.url ?? '');
  sessions.push(sessionManager);
  return createCloudSdk({
    baseUrl: server?.url ?? '',
    transport: (transportOptions) => createGrpcTransport({ ...transportOptions, sessionManager }),
    credentials: options.credentials ?? { serviceAccountKey: keyFile(), options: { lifetime: LIFETIME } },
    retry: options.retry,
    interceptors: options.interceptors,
  });
}

/** Records every attempt of the calls it sees: method, idempotency key, and how it ended. */
function attemptRecorder() {
  const attempts: Array<{ method: string; key: string | null; timeout: string | null; outcome: string }> = [];
  const interceptor: Interceptor = (next) => async (req) => {
    // The token exchange goes through the same interceptors; these tests look at the calls themselves.
    if (req.method.name === 'Exchange') return next(req);
    const attempt = { method: req.method.name, key: req.header.get('x-idempotency-key'), timeout: req.header.get('grpc-timeout'), outcome: 'OK' };
    attempts.push(attempt);
    try {
      return await next(req);
    } catch (error) {
      attempt.outcome = error instanceof ConnectError ? Code[error.code] : String(error);
      throw error;
    }
  };
  return { attempts, interceptor };
}

test('a mutating call answered UNAVAILABLE twice is retried with one idempotency key and executed once', async () => {
  const recorder = attemptRecorder();
  const operationIds: string[] = [];
  let lost = 0;
  // The server does the work, then the answer is lost on the way back (twice): only the key can tell a retry from a new call.
  const loseTwoAnswers: Interceptor = (next) => async (req) => {
    const response = await next(req);
    if (req.method.name !== 'Create') return response;
    if (response.stream) return response;
    operationIds.push((response.message as unknown as { id: string }).id);
    if (lost++ < 2) throw new ConnectError('injected: the connection dropped', Code.Unavailable);
    return response;
  };
  const sdk = sdkWith({ interceptors: [recorder.interceptor, loseTwoAnswers] });
  try {
    const instances = sdk.client(InstanceService);
    const operation = await instances.create({ metadata: { parentId: projectId, name: 'retried-once' } });
    const creates = recorder.attempts.filter((attempt) => attempt.method === 'Create');
    expect(creates.map((attempt) => attempt.outcome)).toEqual(['Unavailable', 'Unavailable', 'OK']);
    expect(new Set(creates.map((attempt) => attempt.key)).size).toBe(1);
    expect(creates[0]?.key).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(operationIds)).toEqual(new Set([operation.id]));
    // Each attempt told the server how long it had left (gosdk's per-retry timeout, 60 s / 3).
    for (const attempt of creates) expect(Number(attempt.timeout?.replace(/m$/, ''))).toBeLessThanOrEqual(20_000);
    await sdk.wait(operation, { intervalMs: 50 });
    const named: string[] = [];
    for await (const instance of instances.list({ parentId: projectId })) named.push(instance.metadata?.name ?? '');
    expect(named.filter((name) => name === 'retried-once')).toHaveLength(1);
  } finally {
    sdk.close();
  }
});

test('Generate, whose answer is not an Operation, answered UNAVAILABLE once is retried with its key and makes one key pair', async () => {
  const recorder = attemptRecorder();
  const answers: Array<{ keyId: string; privateKey: string }> = [];
  let lost = 0;
  // Issue 30: the first answer lost on the way back left two new keys on the server.
  const loseOneAnswer: Interceptor = (next) => async (req) => {
    const response = await next(req);
    if (req.method.name !== 'Generate' || response.stream) return response;
    const message = response.message as unknown as { key?: { metadata?: { id: string } }; privateKey: string };
    answers.push({ keyId: message.key?.metadata?.id ?? '', privateKey: message.privateKey });
    if (lost++ < 1) throw new ConnectError('injected: the connection dropped', Code.Unavailable);
    return response;
  };
  const sdk = sdkWith({ interceptors: [recorder.interceptor, loseOneAnswer] });
  try {
    const keys = sdk.client(AuthPublicKeyService);
    const before = (await keys.list({ parentId: projectId, filter: `service_account_id = "${key.serviceAccountId}"` })).items.length;
    const generated = await keys.generate({ spec: { serviceAccountId: key.serviceAccountId, description: 'retried' } });
    const generates = recorder.attempts.filter((attempt) => attempt.method === 'Generate');
    expect(generates.map((attempt) => attempt.outcome)).toEqual(['Unavailable', 'OK']);
    expect(generates[0]?.key).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(generates.map((attempt) => attempt.key)).size).toBe(1);
    // The retry got the first answer again, private key included.
    expect(answers.map((answer) => answer.keyId)).toEqual([generated.key?.metadata?.id, generated.key?.metadata?.id]);
    expect(answers[0]?.privateKey).toBe(generated.privateKey);
    expect(generated.privateKey).toMatch(/BEGIN PRIVATE KEY/);
    const after = (await keys.list({ parentId: projectId, filter: `service_account_id = "${key.serviceAccountId}"` })).items.length;
    expect(after).toBe(before + 1);
  } finally {
    sdk.close();
  }
});

test('two calls get two idempotency keys, and a key the caller gives is kept', async () => {
  const recorder = attemptRecorder();
  const sdk = sdkWith({ interceptors: [recorder.interceptor] });
  try {
    const instances = sdk.client(InstanceService);
    await instances.create({ metadata: { parentId: projectId, name: 'key-a' } });
    await instances.create({ metadata: { parentId: projectId, name: 'key-b' } }, { headers: { 'x-idempotency-key': 'caller-chosen-key-0001' } });
    await instances.list({ parentId: projectId });
    // Reads carry one too, as gosdk and pysdk send it on every call; the server ignores it there.
    expect(recorder.attempts.map((attempt) => [attempt.method, attempt.key])).toEqual([
      ['Create', expect.stringMatching(/^[0-9a-f-]{36}$/)],
      ['Create', 'caller-chosen-key-0001'],
      ['List', expect.stringMatching(/^[0-9a-f-]{36}$/)],
    ]);
    expect(new Set(recorder.attempts.map((attempt) => attempt.key)).size).toBe(3);
  } finally {
    sdk.close();
  }
});

test('an operation_conflict (retry_type CALL) is retried until the running operation completes', async () => {
  const recorder = attemptRecorder();
  const sdk = sdkWith({ interceptors: [recorder.interceptor], retry: { maxAttempts: 1000, initialBackoffMs: 20, maxBackoffMs: 200 } });
  try {
    const instances = sdk.client(InstanceService);
    const created = await instances.create({ metadata: { parentId: projectId, name: 'conflicted' } });
    // Create's work (COMPUTE_WORK_MS) still runs: Stop is refused with operation_conflict until it is done.
    const stopped = await sdk.wait(await instances.stop({ id: created.resourceId }), { intervalMs: 50 });
    const stops = recorder.attempts.filter((attempt) => attempt.method === 'Stop');
    expect(stops[0]?.outcome).toBe('Aborted');
    expect(stops.at(-1)?.outcome).toBe('OK');
    expect(new Set(stops.map((attempt) => attempt.key)).size).toBe(1);
    expect(stopped.status?.code).toBe(0);
    expect((await instances.get({ id: created.resourceId })).spec?.stopped).toBe(true);
  } finally {
    sdk.close();
  }
});

test('with default retry settings, mutations refused with operation_conflict while a 300 ms operation runs all succeed', async () => {
  const recorder = attemptRecorder();
  const sdk = sdkWith({ interceptors: [recorder.interceptor] });
  try {
    const instances = sdk.client(InstanceService);
    // Issue 30: 8 of 10 such calls failed ABORTED, their 3 attempts spent within ~150 ms of backoff.
    const created = await Promise.all(
      ['c-1', 'c-2', 'c-3', 'c-4', 'c-5'].map((name) => instances.create({ metadata: { parentId: projectId, name: `conflict-${name}` } })),
    );
    const stops = await Promise.allSettled(created.map((operation) => instances.stop({ id: operation.resourceId })));
    expect(stops.map((outcome) => outcome.status)).toEqual(created.map(() => 'fulfilled'));
    expect(recorder.attempts.filter((attempt) => attempt.method === 'Stop').some((attempt) => attempt.outcome === 'Aborted')).toBe(true);
    for (const stop of stops) if (stop.status === 'fulfilled') await sdk.wait(stop.value, { intervalMs: 50 });
  } finally {
    sdk.close();
  }
});

test("raising maxAttempts does not shorten each attempt's timeout (gosdk DefaultPerRetry, 20 s)", async () => {
  const recorder = attemptRecorder();
  const sdk = sdkWith({ interceptors: [recorder.interceptor], retry: { maxAttempts: 10 } });
  try {
    await sdk.client(InstanceService).list({ parentId: projectId });
    expect(recorder.attempts.map((attempt) => attempt.timeout)).toEqual(['20000m']);
  } finally {
    sdk.close();
  }
});

/** Holds an attempt until its signal aborts (a server that never answers), for the first `count` attempts. */
function hangFirst(count: number): Interceptor {
  let seen = 0;
  return (next) => (req) => {
    if (req.method.name === 'Exchange' || seen++ >= count) return next(req);
    if (req.signal.aborted) return Promise.reject(new ConnectError('abandoned by the client', Code.Canceled));
    return new Promise((_resolve, reject) =>
      req.signal.addEventListener('abort', () => reject(new ConnectError('abandoned by the client', Code.Canceled)), { once: true }),
    );
  };
}

test('an attempt that outlives its per-attempt timeout is retried within the overall deadline', async () => {
  const recorder = attemptRecorder();
  const sdk = sdkWith({ interceptors: [recorder.interceptor, hangFirst(1)], retry: { attemptTimeoutMs: 1000, deadlineMs: 30_000, initialBackoffMs: 10 } });
  try {
    // The token first, so the exchange is not part of the timed attempts.
    await sdk.credentials?.token();
    const list = await sdk.client(InstanceService).list({ parentId: projectId });
    expect(list.items.length).toBeGreaterThanOrEqual(0);
    expect(recorder.attempts.map((attempt) => attempt.outcome)).toEqual(['Canceled', 'OK']);
    expect(recorder.attempts.map((attempt) => attempt.timeout)).toEqual(['1000m', '1000m']);
  } finally {
    sdk.close();
  }
});

test('a call whose every attempt hangs fails with DEADLINE_EXCEEDED once the overall deadline is spent', async () => {
  const recorder = attemptRecorder();
  const sdk = sdkWith({
    interceptors: [recorder.interceptor, hangFirst(Infinity)],
    retry: { maxAttempts: 10, attemptTimeoutMs: 200, deadlineMs: 700, initialBackoffMs: 10 },
  });
  try {
    await sdk.credentials?.token();
    const started = Date.now();
    const error = await sdk
      .client(InstanceService)
      .list({ parentId: projectId })
      .then(
        () => undefined,
        (caught: unknown) => caught,
      );
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.DeadlineExceeded);
    expect(Date.now() - started).toBeLessThan(700 + 5000);
    // The attempts shared the 700 ms: the last one got only what was left of it.
    expect(recorder.attempts.length).toBeGreaterThanOrEqual(2);
    expect(recorder.attempts.length).toBeLessThan(10);
    expect(Number(recorder.attempts.at(-1)?.timeout?.replace(/m$/, ''))).toBeLessThanOrEqual(200);
  } finally {
    sdk.close();
  }
});

test('a List call iterates over every page, and awaited gives its first page', async () => {
  const recorder = attemptRecorder();
  const sdk = sdkWith({ interceptors: [recorder.interceptor] });
  try {
    const instances = sdk.client(InstanceService);
    for (const name of ['paged-1', 'paged-2', 'paged-3']) await instances.create({ metadata: { parentId: projectId, name } });
    const all = await instances.list({ parentId: projectId, pageSize: 1000n });
    expect(all.items.length).toBeGreaterThanOrEqual(3);
    const first = await instances.list({ parentId: projectId, pageSize: 2n });
    expect(first.items).toHaveLength(2);
    expect(first.nextPageToken).not.toBe('');
    recorder.attempts.length = 0;
    const iterated: string[] = [];
    for await (const instance of instances.list({ parentId: projectId, pageSize: 2n })) iterated.push(instance.metadata?.id ?? '');
    expect(iterated).toEqual(all.items.map((instance) => instance.metadata?.id));
    // The server reads one row ahead, so the last page carries no next_page_token and no empty page follows.
    expect(recorder.attempts).toHaveLength(Math.ceil(all.items.length / 2));
  } finally {
    sdk.close();
  }
});

test('a bad_request is not retried; its ServiceError and request id are readable', async () => {
  const recorder = attemptRecorder();
  const sdk = sdkWith({ interceptors: [recorder.interceptor] });
  try {
    const error = await sdk
      .client(InstanceService)
      .create({ metadata: { parentId: projectId } })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.InvalidArgument);
    expect(serviceErrorsOf(error as ConnectError)[0]).toMatchObject({ code: 'InvalidArgument', details: { case: 'badRequest' } });
    expect(requestIdOf(error as ConnectError)).not.toBe('');
    expect(recorder.attempts).toHaveLength(1);
  } finally {
    sdk.close();
  }
});

test(
  'a token that expires mid-run is refreshed in the background, a failed refresh is retried, and no call fails',
  async () => {
    let failExchanges = 0;
    const refreshErrors: unknown[] = [];
    const failingExchange: Interceptor = (next) => (req) => {
      if (req.method.name === 'Exchange' && failExchanges > 0) {
        failExchanges--;
        return Promise.reject(new ConnectError('injected: token service down', Code.Unavailable));
      }
      return next(req);
    };
    const sdk = sdkWith({
      interceptors: [failingExchange],
      retry: { maxAttempts: 2, initialBackoffMs: 10 },
      credentials: {
        serviceAccountKey: keyFile(),
        options: { lifetime: LIFETIME, initialRetryMs: 100, onRefreshError: (error) => refreshErrors.push(error) },
      },
    });
    try {
      const credentials = sdk.credentials as ServiceAccountCredentials;
      const profiles = sdk.client(ProfileService);
      const tokens = new Set<string>();
      let calls = 0;
      // Calls run back to back until the token has been refreshed twice (the first refresh fails once
      // both its attempts are refused, and is retried 100 ms later, while the first token is still valid).
      const first = await profiles.get({});
      expect(first.profile.case).toBe('serviceAccountProfile');
      tokens.add(await credentials.token());
      failExchanges = 2;
      while (credentials.exchanges < 4) {
        const profile = await profiles.get({});
        expect(profile.profile.case).toBe('serviceAccountProfile');
        tokens.add(await credentials.token());
        calls++;
      }
      expect(refreshErrors).toHaveLength(1);
      expect(tokens.size).toBeGreaterThanOrEqual(2);
      expect(calls).toBeGreaterThan(0);
    } finally {
      sdk.close();
    }
  },
  (IAM_TOKEN_TTL_SECONDS * 3 + 30) * 1000,
);

test('wait keeps polling through polling errors that may be retried (gosdk PollErrorBackoff)', async () => {
  const recorder = attemptRecorder();
  let failures = 2;
  const failTwoPolls: Interceptor = (next) => (req) => {
    if (req.service.typeName === 'cloud.common.v1.OperationService' && failures-- > 0)
      return Promise.reject(new ConnectError('injected: poll failed', Code.Unavailable));
    return next(req);
  };
  // One attempt per call, so the failed polls reach wait itself.
  const sdk = sdkWith({ interceptors: [recorder.interceptor, failTwoPolls], retry: { maxAttempts: 1 } });
  try {
    const created = await sdk.client(InstanceService).create({ metadata: { parentId: projectId, name: 'polled' } });
    const done = await sdk.wait(created, { intervalMs: 20 });
    expect(done.status?.code).toBe(0);
    const polls = recorder.attempts.filter((attempt) => attempt.method === 'Wait' || attempt.method === 'Get').map((attempt) => attempt.outcome);
    expect(polls.slice(0, 3)).toEqual(['Unavailable', 'Unavailable', 'OK']);
  } finally {
    sdk.close();
  }
});

test('wait returns a finished operation, reports progress, and throws a failed one with its ServiceError decoded', async () => {
  const sdk = sdkWith();
  try {
    const instances = sdk.client(InstanceService);
    const seen: string[] = [];
    const created = await instances.create({ metadata: { parentId: projectId, name: 'waited' } });
    expect(created.status).toBeUndefined();
    const done = await sdk.wait(created, { intervalMs: 20, onProgress: (operation) => seen.push(operation.id) });
    expect(done).toMatchObject({ id: created.id, resourceId: created.resourceId, status: { code: 0 } });
    expect(done.finishedAt).toBeDefined();
    expect(new Set(seen)).toEqual(seen.length > 0 ? new Set([created.id]) : new Set());

    const operations = new Operations(server?.app.db.knex ?? (undefined as never));
    const failed = await operations.begin(server?.app.db.knex ?? (undefined as never), {
      service: 'compute',
      description: 'Create instance',
      createdBy: key.serviceAccountId,
      resourceId: 'instance-failed',
      parentId: projectId,
      request: new Uint8Array(),
      status: encodeStatus(
        toRpcStatus(
          new AppError('resource_exhausted', 'no capacity left', {
            detail: { kind: 'quota_failure', quota: 'compute.instances.count', limit: 1, requested: 2 },
          }),
          {
            service: 'compute',
            requestId: 'r',
          },
        ),
      ),
    });
    const pending = { ...done, id: failed.id, status: undefined };
    const error = await sdk.wait(pending, { intervalMs: 20 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OperationError);
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as OperationError).code).toBe(Code.ResourceExhausted);
    expect(serviceErrorsOf(error as OperationError)[0]).toMatchObject({ code: 'QuotaFailure', details: { case: 'quotaFailure' } });
  } finally {
    sdk.close();
  }
});
