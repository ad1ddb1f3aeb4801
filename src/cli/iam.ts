/**
 * The hand-written commands, whose behaviour predates the generated ones (docs/iam.md uses them):
 * user sign-in, whoami, key generation into a file, the JWT exchange, and `operation wait`.
 */
import { closeSync, existsSync, linkSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { OperationSchema } from '../../generated/proto/cloud/common/v1/operation_pb.js';
import { OperationService } from '../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { AuthPublicKeyService } from '../../generated/proto/cloud/iam/v1/auth_public_key_service_pb.js';
import { ProfileService } from '../../generated/proto/cloud/iam/v1/profile_service_pb.js';
import { TokenExchangeService } from '../../generated/proto/cloud/iam/v1/token_exchange_service_pb.js';
import { OperationError, ServiceAccountCredentials, parseServiceAccountKey, signServiceAccountKeyJwt, type ServiceAccountKey } from '../sdk/index.js';
import { stringValue, type Command, type Values } from './command.js';
import { EXIT, print, printMessage, UsageError } from './output.js';
import { CLI_POLL_MS } from './resources.js';
import { progressLine } from './progress.js';

const COMMON = `Common options:
  --server URL     the server (env CFS_SERVER, else the profile's, default http://localhost:8080)
  --token TOKEN    the bearer token (env CFS_TOKEN, else the profile's); see "cfs iam get-access-token"
  --profile NAME   the profile to use (env CFS_PROFILE); see "cfs profile"
  --format FORMAT  json, yaml or table (default: table on a terminal, JSON otherwise)
  --help           this help`;

function required(values: Values, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

export function readKeyFile(path: string): ServiceAccountKey {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read the key file ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  try {
    return parseServiceAccountKey(text);
  } catch (error) {
    throw new UsageError(`the key file ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * A key file about to be written: a private temporary file beside `output` (mode 0600) made before the
 * server is asked, so a path that cannot be written fails first. `commit` fills it and puts it in
 * place (without --force never over an existing file); `discard` removes it.
 */
function stageKeyFile(output: string, force: boolean): { commit: (text: string) => void; discard: () => void } {
  if (!force && existsSync(output)) throw new UsageError(`${output} exists: nothing was generated (pass --force to overwrite it)`);
  const temporary = join(dirname(output), `.${basename(output)}.${randomBytes(6).toString('hex')}.tmp`);
  let fd: number;
  try {
    fd = openSync(temporary, 'wx', 0o600);
  } catch (error) {
    throw new UsageError(`cannot write beside ${output}: ${error instanceof Error ? error.message : String(error)} (nothing was generated)`);
  }
  let open = true;
  const close = (): void => {
    if (open) closeSync(fd);
    open = false;
  };
  return {
    commit(text) {
      writeSync(fd, text);
      close();
      if (force) renameSync(temporary, output);
      else {
        try {
          linkSync(temporary, output); // EEXIST if the file appeared meanwhile: never overwritten
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw error;
          writeFileSync(output, text, { mode: 0o600, flag: 'wx' }); // a file system without hard links
        }
        rmSync(temporary, { force: true });
      }
    },
    discard() {
      close();
      rmSync(temporary, { force: true });
    },
  };
}

/** fetch, with a server that cannot be reached reported as UNAVAILABLE (exit 6), like a gRPC call. */
async function post(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, { ...init, method: 'POST' });
  } catch (error) {
    const cause = (error as { cause?: { message?: string } }).cause?.message;
    throw new ConnectError(`cannot reach ${new URL(url).origin}: ${cause || (error instanceof Error ? error.message : String(error))}`, Code.Unavailable);
  }
}

/** POST /api/auth: a user's access token. */
export async function signIn(server: string, name: string, password: string): Promise<string> {
  const response = await post(`${server}/api/auth`, {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name, password }),
  });
  const body = (await response.json().catch(() => ({}))) as { accessToken?: string; message?: string };
  if (response.status !== 200 || !body.accessToken) throw new Error(`sign-in failed (${response.status}): ${body.message ?? 'no token'}`);
  return body.accessToken;
}

const GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const JWT_TYPE = 'urn:ietf:params:oauth:token-type:jwt';

export const iamCommands: Command[] = [
  {
    words: ['iam', 'get-access-token'],
    summary: 'sign a user in and print the access token',
    help: `Usage: cfs iam get-access-token --name NAME --password PASSWORD [--server URL]

Signs a user in (POST /api/auth) and prints the access token, for CFS_TOKEN or "Authorization: Bearer".

${COMMON}`,
    options: { name: { type: 'string' }, password: { type: 'string' } },
    async run({ values, session }) {
      print(await signIn(session.server, required(values, 'name'), required(values, 'password')));
      return EXIT.ok;
    },
  },
  {
    words: ['iam', 'whoami'],
    summary: "print the caller's profile (ProfileService.Get)",
    help: `Usage: cfs iam whoami [--token TOKEN] [--server URL]

Prints ProfileService.Get: a user, a service account, or anonymous without a token.

${COMMON}`,
    options: {},
    async run({ session }) {
      const sdk = session.credentials() ? session.sdk() : session.sdk({ anonymous: true });
      printMessage(session.format, ProfileService.method.get.output, await sdk.client(ProfileService).get({}));
      return EXIT.ok;
    },
  },
  {
    words: ['iam', 'key', 'generate'],
    summary: 'generate a key pair; write the private key to a file',
    help: `Usage: cfs iam key generate --service-account ID --output key.json [--description TEXT] [--force] [--token TOKEN]

Asks the server to generate an RSA 2048 key pair for the service account. The server keeps only the
public key; the private key is written to the output file (mode 0600) as
{"id", "service_account_id", "private_key"} and exists nowhere else. An existing file is kept
unless --force is given. Prints the key id. The file is what a profile's --key-file and the SDK's
service-account credentials take.

${COMMON}`,
    options: { 'service-account': { type: 'string' }, output: { type: 'string' }, description: { type: 'string' }, force: { type: 'boolean' } },
    async run({ values, session }) {
      session.requireCredentials();
      const output = required(values, 'output');
      const serviceAccountId = required(values, 'service-account');
      // The private key exists only in the answer: the file must be writable before the server makes
      // the pair, and a key whose private half could not be written is deleted again.
      const force = values.force === true;
      const staged = stageKeyFile(output, force);
      let generated;
      try {
        generated = await session
          .sdk()
          .client(AuthPublicKeyService)
          .generate({ spec: { serviceAccountId, description: stringValue(values.description) ?? '' } });
      } catch (error) {
        staged.discard();
        throw error;
      }
      const file = { id: generated.key?.metadata?.id ?? '', service_account_id: serviceAccountId, private_key: generated.privateKey };
      try {
        staged.commit(`${JSON.stringify(file, null, 2)}\n`);
      } catch (error) {
        staged.discard();
        const reason = error instanceof Error ? error.message : String(error);
        try {
          await session.sdk().wait(await session.sdk().client(AuthPublicKeyService).delete({ id: file.id }));
        } catch (deleteError) {
          const why = deleteError instanceof Error ? deleteError.message : String(deleteError);
          throw new UsageError(
            `cannot write ${output}: ${reason}; the key ${file.id} could not be deleted either (${why}): delete it with "cfs iam auth-public-key delete ${file.id}"`,
          );
        }
        throw new UsageError(`cannot write ${output}: ${reason}; the key ${file.id} was deleted again`);
      }
      print(file.id);
      return EXIT.ok;
    },
  },
  {
    words: ['iam', 'exchange'],
    summary: 'sign a JWT with a key file and exchange it for an access token',
    help: `Usage: cfs iam exchange --key key.json [--http] [--ttl SECONDS] [--server URL]

Signs a JWT with the key file (RS256, kid = key id, iss = sub = service account id, exp in 5 minutes
or --ttl) and exchanges it for an access token over gRPC (TokenExchangeService.Exchange), or over
HTTP (POST /oauth2/token/exchange) with --http. Prints the access token. Needs no --token.

${COMMON}`,
    options: { key: { type: 'string' }, http: { type: 'boolean' }, ttl: { type: 'string' } },
    async run({ values, session }) {
      const key = readKeyFile(required(values, 'key'));
      const ttl = stringValue(values.ttl);
      const jwtTtlSeconds = ttl === undefined ? undefined : Number(ttl);
      if (jwtTtlSeconds !== undefined && !(Number.isInteger(jwtTtlSeconds) && jwtTtlSeconds > 0))
        throw new UsageError('--ttl must be a positive whole number of seconds');
      if (values.http) {
        const jwt = await signServiceAccountKeyJwt(key, { jwtTtlSeconds });
        const response = await post(`${session.server}/oauth2/token/exchange`, {
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({
            grant_type: GRANT_TYPE,
            requested_token_type: ACCESS_TOKEN_TYPE,
            subject_token: jwt,
            subject_token_type: JWT_TYPE,
          }).toString(),
        });
        const body = (await response.json().catch(() => ({}))) as { access_token?: string; error?: string; error_description?: string };
        if (response.status !== 200 || !body.access_token)
          throw new Error(`exchange failed (${response.status}): ${body.error ?? ''} ${body.error_description ?? ''}`.trim());
        print(body.access_token);
        return EXIT.ok;
      }
      const credentials = new ServiceAccountCredentials(key, createClient(TokenExchangeService, createGrpcTransport({ baseUrl: session.server })), {
        jwtTtlSeconds,
      });
      try {
        print(await credentials.token());
      } finally {
        credentials.close();
      }
      return EXIT.ok;
    },
  },
  {
    words: ['operation', 'wait'],
    summary: 'wait for an operation to finish and print it',
    args: '<operation-id>',
    help: `Usage: cfs operation wait <operation-id> [--timeout SECONDS] [--token TOKEN]

Waits with OperationService.Wait (polling OperationService.Get against a server without it)
until the operation is done, showing its progress on a terminal, prints it, and exits 0 when it
succeeded, 1 when it failed or was cancelled (its status holds the error), 3 on timeout (default
300 s).

${COMMON}`,
    options: { timeout: { type: 'string' } },
    async run({ values, positionals, session }) {
      session.requireCredentials();
      const id = positionals[0];
      if (!id) throw new UsageError('the operation id is required: cfs operation wait <id>');
      const timeoutMs = Number(stringValue(values.timeout) ?? 300) * 1000;
      if (!(timeoutMs > 0)) throw new UsageError('--timeout must be a positive number of seconds');
      const sdk = session.sdk();
      const operation = await createClient(OperationService, sdk.transport).get({ id });
      const line = progressLine(process.stderr);
      try {
        const done = await sdk.wait(operation, { intervalMs: CLI_POLL_MS, timeoutMs, onProgress: line.onProgress }).finally(() => line.done());
        printMessage(session.format, OperationSchema, done);
        return EXIT.ok;
      } catch (error) {
        if (error instanceof OperationError) {
          printMessage(session.format, OperationSchema, error.operation);
          return EXIT.failed;
        }
        if ((error as { name?: string }).name === 'TimeoutError') {
          process.stderr.write(`cfs: operation ${id} is still running after ${timeoutMs / 1000} s\n`);
          return EXIT.timeout;
        }
        throw error;
      }
    },
  },
];
