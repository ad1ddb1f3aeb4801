import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadContractDocument } from '../http/contract-documents.js';
import { ROOT } from '../server/paths.js';

/** What the seed made that a client needs: credentials, and the ids of what it can list. */
export interface SeededState {
  admin: { name: string; password: string; token: string };
  superuser: { email: string; password: string; token: string };
  /** The example user of `POST /api/auth` (alice) and of `POST /api/users` (bob). */
  users: Array<{ name: string; password: string; id: string }>;
  /** The example writer of `POST /v1/writers` (Ada), signed in. */
  writer: { email: string; password: string; id: string; token: string };
  topicId: string;
  articleIds: string[];
  routeId: string;
  projectId: string;
  instanceIds: string[];
  serviceAccountId: string;
  /** The service account's key file (`cfs iam exchange --key`), in a temporary directory of its own. */
  keyFile: string;
}

interface Credentials {
  admin: { name: string; password: string };
  superuser: { email: string; password: string };
}

/** The JSON request-body example of an operation in one of contracts/openapi/*.yaml. */
function requestExample(contract: string, path: string, method: string): Record<string, unknown> {
  const document = loadContractDocument(`${ROOT}contracts/openapi/${contract}.yaml`).document as {
    paths: Record<string, Record<string, { requestBody?: { content?: Record<string, { example?: unknown }> } }>>;
  };
  const example = document.paths[path]?.[method]?.requestBody?.content?.['application/json']?.example;
  if (!example || typeof example !== 'object') throw new Error(`${contract}.yaml: ${method.toUpperCase()} ${path} has no request example`);
  return structuredClone(example) as Record<string, unknown>;
}

/** One JSON request to the sandbox itself; anything but a 2xx stops the seed. */
async function request(baseUrl: string, method: string, path: string, body?: unknown, token?: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`seeding: ${method} ${path} answered ${response.status}: ${text}`);
  return (text && /json/.test(response.headers.get('content-type') ?? '') ? JSON.parse(text) : text) as Record<string, unknown> & string;
}

/** The seed's own code: part of the key of a kept seeded dump (cache.ts), so a changed seed seeds afresh. */
export function seedCode(): string {
  return readFileSync(fileURLToPath(import.meta.url), 'utf8');
}

/** Writes a key file into a new private temporary directory; answers its path. */
function writeKeyFile(text: string): string {
  const keyFile = join(mkdtempSync(join(tmpdir(), 'cfs-sandbox-')), 'key.json');
  writeFileSync(keyFile, text, { mode: 0o600 });
  return keyFile;
}

/**
 * A sandbox loaded from a kept seeded dump: the same users, ids and key, fresh tokens (signed in
 * again, as a client would) and the key file written again.
 */
export async function resumeSeed(baseUrl: string, saved: SeededState, keyText: string): Promise<SeededState> {
  const [admin, superuser, writer] = await Promise.all([
    request(baseUrl, 'POST', '/api/auth', { name: saved.admin.name, password: saved.admin.password }),
    request(baseUrl, 'POST', '/v1/writers/login', { email: saved.superuser.email, password: saved.superuser.password }),
    request(baseUrl, 'POST', '/v1/writers/login', { email: saved.writer.email, password: saved.writer.password }),
  ]);
  return {
    ...saved,
    admin: { ...saved.admin, token: admin.accessToken as string },
    superuser: { ...saved.superuser, token: superuser.accessToken as string },
    writer: { ...saved.writer, token: writer.accessToken as string },
    keyFile: writeKeyFile(keyText),
  };
}

/**
 * Fills a fresh sandbox through its own APIs, as a client would (every rule and hash applied), from
 * the contracts' own examples: the users of `POST /api/auth` and `POST /api/users`, the writer,
 * topic and article of the publishing API (one published, one draft), a webhook route of
 * `POST /routes` with two captured requests, two instances (the proto comments' platform, preset
 * and interface names) in the `default` project, and a service account with a generated key.
 */
export async function seed(baseUrl: string, credentials: Credentials, mark: (step: string) => void = () => undefined): Promise<SeededState> {
  const call = (method: string, path: string, body?: unknown, token?: string, headers: Record<string, string> = {}) =>
    request(baseUrl, method, path, body, token, headers);
  const rpc = (method: string, message: unknown, token: string) => call('POST', `/${method}`, message, token);

  // Users API: the admin of ADMIN_*, then the two example users.
  // Its sign-in makes the admin (a first run's onboarding). The four families need nothing from each
  // other, and only the users and cloud ones the admin's token: seeded side by side (password hashes
  // on the thread pool, the store's statements interleaved), each marked when done.
  const signIn = call('POST', '/api/auth', { name: credentials.admin.name, password: credentials.admin.password }).then((answer) => {
    mark('admin');
    return answer.accessToken as string;
  });
  const users = async (adminToken: string) => {
    const signInExample = requestExample('users', '/api/auth', 'post') as { name: string; password: string };
    const createExample = requestExample('users', '/api/users', 'post');
    const updateExample = requestExample('users', '/api/users/{id}', 'put');
    const made = await Promise.all(
      [createExample, { ...createExample, name: signInExample.name, password: signInExample.password }].map(async (body) => {
        const user = await call('POST', '/api/users', body, adminToken);
        return { name: body.name as string, password: body.password as string, id: user.id as string };
      }),
    );
    await call('PUT', `/api/users/${made[0]!.id}`, updateExample, adminToken);
    mark('users');
    return made;
  };
  // Publishing: the superuser of SUPERUSER_*, the example writer and topic, two articles.
  const publishing = async () => {
    const superuserToken = (await call('POST', '/v1/writers/login', { email: credentials.superuser.email, password: credentials.superuser.password }))
      .accessToken as string;
    const writerExample = requestExample('publishing', '/v1/writers', 'post');
    const [writer, topic] = await Promise.all([
      call('POST', '/v1/writers', writerExample, superuserToken),
      call('POST', '/v1/topics', requestExample('publishing', '/v1/topics', 'post'), superuserToken),
    ]);
    const writerToken = (await call('POST', '/v1/writers/login', requestExample('publishing', '/v1/writers/login', 'post'))).accessToken as string;
    const articleExample = { ...requestExample('publishing', '/v1/articles', 'post'), topic: topic._id };
    const revisedExample = { ...requestExample('publishing', '/v1/articles/{id}', 'put'), topic: topic._id };
    const [published, draft] = await Promise.all([
      call('POST', '/v1/articles', articleExample, writerToken),
      call('POST', '/v1/articles', revisedExample, writerToken),
    ]);
    await call('POST', `/v1/articles/${published._id}/publish`, undefined, superuserToken);
    mark('publishing');
    return {
      superuserToken,
      writer: { email: writerExample.email as string, password: writerExample.password as string, id: writer._id as string, token: writerToken },
      topicId: topic._id as string,
      articleIds: [published._id as string, draft._id as string],
    };
  };
  // Webhook inspector: the example route and two requests captured on it.
  const webhooks = async () => {
    // Its lifetime the longest allowed: the seeded route outlives a day's session and a kept dump.
    const route = await call('POST', '/routes', { ...requestExample('webhooks', '/routes', 'post'), ttlSeconds: 30 * 24 * 3600 });
    const routeId = route.routeId as string;
    await call('POST', `/${routeId}`, { event: 'order.created', id: 42 }, undefined, { 'x-hook-signature': 'sandbox' });
    await call('GET', `/${routeId}/status?attempt=1`);
    // Captures are written in batches: the seed is complete once both are stored.
    for (let attempt = 0; ; attempt++) {
      const inspected = await call('GET', `/inspect/${routeId}`, undefined, undefined, { accept: 'application/json' });
      if (((inspected.items as unknown[] | undefined) ?? []).length >= 2) break;
      if (attempt > 200) throw new Error('seeding: the captured requests were not stored');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    mark('webhooks');
    return routeId;
  };
  // Cloud API: the default project, two instances, a service account and its key.
  const cloud = async (adminToken: string) => {
    const projects = (await rpc('cloud.iam.v1.ProjectService/List', {}, adminToken)).items as Array<{ metadata: { id: string; name: string } }>;
    const projectId = (projects.find((project) => project.metadata.name === 'default') ?? projects[0])!.metadata.id;
    const instanceOperations = await Promise.all(
      ['web-0', 'web-1'].map((name) =>
        rpc(
          'cloud.compute.v1.InstanceService/Create',
          {
            metadata: { parentId: projectId, name, labels: { env: 'prod' } },
            spec: { description: 'A sandbox instance', resources: { platform: 'cpu-e2', preset: '4vcpu-16gb' }, networkInterfaces: [{ name: 'eth0' }] },
          },
          adminToken,
        ),
      ),
    );
    const account = await rpc('cloud.iam.v1.ServiceAccountService/Create', { metadata: { parentId: projectId, name: 'deployer' } }, adminToken);
    const serviceAccountId = (account.resourceId as string) || ((account.response as { metadata?: { id?: string } } | undefined)?.metadata?.id ?? '');
    const generated = await rpc('cloud.iam.v1.AuthPublicKeyService/Generate', { spec: { serviceAccountId, description: 'sandbox key' } }, adminToken);
    const key = generated.key as { metadata: { id: string } };
    const keyFile = writeKeyFile(`${JSON.stringify({ id: key.metadata.id, service_account_id: serviceAccountId, private_key: generated.privateKey })}\n`);
    const instanceIds = await Promise.all(
      instanceOperations.map(async (operation) => {
        const done = await rpc('cloud.common.v1.OperationService/Wait', { id: operation.id }, adminToken);
        const status = done.status as { code?: number } | undefined;
        if (status?.code) throw new Error(`seeding: creating an instance failed: ${JSON.stringify(status)}`);
        return done.resourceId as string;
      }),
    );
    mark('cloud');
    return { projectId, instanceIds, serviceAccountId, keyFile };
  };
  const [seededUsers, seededPublishing, routeId, seededCloud, adminToken] = await Promise.all([
    signIn.then(users),
    publishing(),
    webhooks(),
    signIn.then(cloud),
    signIn,
  ]);
  return {
    admin: { ...credentials.admin, token: adminToken },
    superuser: { ...credentials.superuser, token: seededPublishing.superuserToken },
    users: seededUsers,
    writer: seededPublishing.writer,
    topicId: seededPublishing.topicId,
    articleIds: seededPublishing.articleIds,
    routeId,
    ...seededCloud,
  };
}
