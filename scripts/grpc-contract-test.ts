/**
 * The gRPC half of the contract test: `buf curl` (a client that knows nothing but contracts/proto)
 * calls every RPC of the cloud API over gRPC (h2c, prior knowledge) against a live server, and
 * checks the answers: responses decode with the contract's schema, mutations return running
 * Operations that complete, errors carry a `cloud.common.v1.ServiceError` detail.
 *
 * Standalone: `node --import tsx scripts/grpc-contract-test.ts` (exit code 0 = pass). The dredd
 * runner can call `runGrpcContract()` and print its lines in its summary.
 */
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadConfig } from '../src/config.js';
import { build } from '../src/server/build.js';
import { signServiceAccountJwt } from '../src/engines/service-account-jwt/index.js';
import { freshStore } from './support/fresh-store.js';

const ROOT = new URL('../', import.meta.url).pathname;
const ADMIN = { name: 'grpc-contract-admin', password: 'grpc-contract-password' };

export interface GrpcContractOutcome {
  contract: string;
  ok: boolean;
  lines: string[];
}

interface CurlResult {
  code: number;
  stdout: string;
  stderr: string;
}

function bufCurl(url: string, method: string, body: unknown, headers: Record<string, string>): Promise<CurlResult> {
  const args = ['curl', '--schema', 'contracts/proto', '--protocol', 'grpc', '--http2-prior-knowledge'];
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}: ${value}`);
  args.push('-d', JSON.stringify(body), `${url}/${method}`);
  return new Promise((resolve, reject) => {
    const child = spawn(join(ROOT, 'node_modules/.bin/buf'), args, { cwd: ROOT });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

/** Runs every cloud RPC through buf curl against a fresh server; never throws for a failed check. */
export async function runGrpcContract(): Promise<GrpcContractOutcome> {
  const lines: string[] = [];
  let checks = 0;
  const failures: string[] = [];
  const check = (name: string, ok: boolean, detail = '') => {
    checks++;
    if (!ok) failures.push(`failed: ${name}${detail ? ` — ${detail}` : ''}`);
  };
  const store = await freshStore('grpc_contract');
  try {
    const config = loadConfig({
      ...process.env,
      LOG_LEVEL: process.env.CONTRACT_LOG_LEVEL ?? 'warn',
      MIGRATE: 'true',
      COMPUTE_WORK_MS: '50',
      OPERATION_POLL_MS: '50',
      ADMIN_USERNAME: ADMIN.name,
      ADMIN_PASSWORD: ADMIN.password,
      ...store.env,
    });
    const app = await build(config);
    try {
      const port = await app.listen(0, '127.0.0.1');
      const url = `http://127.0.0.1:${port}`;
      console.log(`\n=== cloud gRPC: buf curl against ${url}`);
      const signIn = await fetch(`${url}/api/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) });
      const { accessToken } = (await signIn.json()) as { accessToken: string };
      const auth = { Authorization: `Bearer ${accessToken}` };
      const call = async (method: string, body: unknown, headers: Record<string, string> = {}): Promise<Record<string, unknown>> => {
        const result = await bufCurl(url, method, body, { ...auth, ...headers });
        check(`${method} succeeds`, result.code === 0, result.stderr.trim());
        return result.code === 0 && result.stdout.trim() !== '' ? (JSON.parse(result.stdout) as Record<string, unknown>) : {};
      };
      const expectError = async (method: string, body: unknown, code: string, headers: Record<string, string> = auth) => {
        const result = await bufCurl(url, method, body, headers);
        let parsed: { code?: string; details?: Array<{ type?: string }> } = {};
        try {
          parsed = JSON.parse(result.stderr) as typeof parsed;
        } catch {
          parsed = {};
        }
        check(`${method} answers ${code}`, result.code !== 0 && parsed.code === code, result.stderr.trim());
        check(
          `${method} ${code} carries a ServiceError`,
          (parsed.details ?? []).some((detail) => detail.type === 'cloud.common.v1.ServiceError'),
          result.stderr.trim(),
        );
      };
      const waitDone = async (id: string) => {
        for (let attempt = 0; attempt < 100; attempt++) {
          const operation = await call('cloud.common.v1.OperationService/Get', { id });
          if (operation.status !== undefined) return operation;
        }
        check(`operation ${id} completes`, false);
        return {};
      };
      const I = 'cloud.compute.v1.InstanceService';
      const P = 'cloud.iam.v1.ProjectService';
      const SA = 'cloud.iam.v1.ServiceAccountService';
      const K = 'cloud.iam.v1.AuthPublicKeyService';

      // IAM: a project for the instances, a service account with keys, the token exchange.
      const project = await call(`${P}/Create`, { metadata: { name: 'contract' }, spec: { description: 'made by buf curl' } });
      check('ProjectService.Create returns a complete Operation', (project.status as object | undefined) !== undefined, JSON.stringify(project));
      const parentId = String(project.resourceId ?? '');
      const projectRead = await call(`${P}/Get`, { id: parentId });
      const tenant = String((projectRead.metadata as { parentId?: string } | undefined)?.parentId ?? '');
      await call(`${P}/GetByName`, { parentId: tenant, name: 'contract' });
      const projects = await call(`${P}/List`, { parentId: tenant });
      check('ProjectService.List shows the default project', JSON.stringify(projects).includes('"name":"default"'), JSON.stringify(projects));
      await call(`${P}/Update`, { metadata: { id: parentId }, spec: { description: 'updated by buf curl' } });
      const account = await call(`${SA}/Create`, { metadata: { parentId, name: 'contract-robot' } });
      const accountId = String(account.resourceId ?? '');
      await call(`${SA}/Get`, { id: accountId });
      await call(`${SA}/GetByName`, { parentId, name: 'contract-robot' });
      await call(`${SA}/List`, { parentId });
      await call(`${SA}/Update`, { metadata: { id: accountId }, spec: { description: 'robot' } });
      const generated = await call(`${K}/Generate`, { spec: { serviceAccountId: accountId } });
      const keyId = String((generated.key as { metadata?: { id?: string } } | undefined)?.metadata?.id ?? '');
      const privateKey = String(generated.privateKey ?? '');
      check('Generate returns the private key once', privateKey.startsWith('-----BEGIN PRIVATE KEY-----'));
      const uploaded = await call(`${K}/Create`, {
        spec: {
          serviceAccountId: accountId,
          data: generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }).toString(),
        },
      });
      await call(`${K}/Get`, { id: keyId });
      await call(`${K}/List`, { parentId, filter: `service_account_id = "${accountId}"` });
      await call(`${K}/Deactivate`, { id: String(uploaded.resourceId ?? '') });
      await call(`${K}/Activate`, { id: String(uploaded.resourceId ?? '') });
      await call(`${K}/Delete`, { id: String(uploaded.resourceId ?? '') });
      const anonymous = await bufCurl(url, 'cloud.iam.v1.ProfileService/Get', {}, {});
      check(
        'ProfileService.Get without a token answers anonymousProfile',
        anonymous.code === 0 && anonymous.stdout.includes('anonymousProfile'),
        anonymous.stderr,
      );
      const jwt = signServiceAccountJwt({ serviceAccountId: accountId, keyId, privateKey });
      const exchange = {
        grantType: 'urn:ietf:params:oauth:grant-type:token-exchange',
        requestedTokenType: 'urn:ietf:params:oauth:token-type:access_token',
        subjectToken: jwt,
        subjectTokenType: 'urn:ietf:params:oauth:token-type:jwt',
      };
      const exchanged = await bufCurl(url, 'cloud.iam.v1.TokenExchangeService/Exchange', exchange, {});
      check('TokenExchangeService.Exchange succeeds without a bearer token', exchanged.code === 0, exchanged.stderr);
      const robotToken = exchanged.code === 0 ? String((JSON.parse(exchanged.stdout) as { accessToken?: string }).accessToken ?? '') : '';
      const robot = await bufCurl(url, 'cloud.iam.v1.ProfileService/Get', {}, { Authorization: `Bearer ${robotToken}` });
      check('ProfileService.Get with the exchanged token answers serviceAccountProfile', robot.code === 0 && robot.stdout.includes(accountId), robot.stderr);
      await expectError('cloud.iam.v1.TokenExchangeService/Exchange', { ...exchange, subjectToken: `${jwt}x` }, 'unauthenticated', {});
      await expectError(`${P}/Create`, { metadata: { name: 'contract' } }, 'already_exists');
      await expectError(`${SA}/Create`, { metadata: { parentId: 'project-missing', name: 'x' } }, 'not_found');
      await expectError(`${P}/Create`, { metadata: { name: 'robot-made' } }, 'permission_denied', { Authorization: `Bearer ${robotToken}` });

      await call(`${I}/List`, { parentId });
      const created = await call(
        `${I}/Create`,
        { metadata: { parentId, name: 'contract-vm' }, spec: { description: 'made by buf curl' } },
        { 'X-Idempotency-Key': 'contract-create-000000000001' },
      );
      check('Create returns a running Operation', typeof created.id === 'string' && created.status === undefined, JSON.stringify(created));
      const resourceId = String(created.resourceId ?? '');
      await waitDone(String(created.id));
      const instance = await call(`${I}/Get`, { id: resourceId });
      check('the created instance is RUNNING', (instance.status as { state?: string } | undefined)?.state === 'STATE_RUNNING', JSON.stringify(instance));
      await call(`${I}/GetByName`, { parentId, name: 'contract-vm' });
      const updated = await call(`${I}/Update`, { metadata: { id: resourceId }, spec: {} }, { 'X-ResetMask': 'spec.description' });
      check('Update records the canonical mask', JSON.stringify(updated.requestHeaders ?? {}).includes('spec.description'), JSON.stringify(updated));
      await waitDone(String(updated.id));
      for (const method of ['Stop', 'Start']) await waitDone(String((await call(`${I}/${method}`, { id: resourceId })).id));
      await call(`${I}/ListOperationsByParent`, { parentId });
      const history = await call('cloud.common.v1.OperationService/List', { resourceId });
      check('OperationService.List shows every operation', Array.isArray(history.operations) && history.operations.length === 4, JSON.stringify(history));
      const stops = await call(`${I}/ListOperationsByParent`, { parentId, filter: 'description = "Stop instance" AND status:*' });
      check('ListOperationsByParent takes a filter', Array.isArray(stops.operations) && stops.operations.length === 1, JSON.stringify(stops));
      const updates = await call('cloud.common.v1.OperationService/List', { resourceId, filter: 'description = "Update instance" AND status.code = 0' });
      check('OperationService.List takes a filter', Array.isArray(updates.operations) && updates.operations.length === 1, JSON.stringify(updates));
      await expectError('cloud.common.v1.OperationService/List', { resourceId, filter: 'status.message = x' }, 'invalid_argument');
      await waitDone(String((await call(`${I}/Delete`, { id: resourceId })).id));

      await expectError(`${I}/Get`, { id: resourceId }, 'not_found');
      await expectError(`${I}/Create`, { metadata: { parentId } }, 'invalid_argument');
      await expectError(`${I}/List`, { parentId }, 'unauthenticated', {});
      await expectError(`${I}/Update`, { metadata: { id: resourceId } }, 'invalid_argument', { ...auth, 'X-ResetMask': 'spec.(' });
      await expectError(`${P}/Delete`, { id: parentId }, 'failed_precondition');
      await call(`${K}/Delete`, { id: keyId });
      await call(`${SA}/Delete`, { id: accountId });
      await call(`${P}/Delete`, { id: parentId });
    } finally {
      await app.close();
    }
  } catch (error) {
    failures.push(`crashed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  } finally {
    await store.remove();
  }
  lines.push(`${checks} checks: ${checks - failures.length} passed, ${failures.length} failed`, ...failures);
  return { contract: 'cloud gRPC (buf curl)', ok: failures.length === 0, lines };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const outcome = await runGrpcContract();
  console.log(`${outcome.ok ? 'PASS' : 'FAIL'} ${outcome.contract}: ${outcome.lines[0] ?? ''}`);
  for (const line of outcome.lines.slice(1)) console.log(`     ${line}`);
  process.exitCode = outcome.ok ? 0 : 1;
}
