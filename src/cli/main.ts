/**
 * `cfs`, the command-line client of the cloud API (docs/iam.md): user sign-in, service accounts, keys,
 * the JWT → access token exchange, and waiting on operations. It speaks gRPC (h2c or TLS) through
 * connect-node's gRPC transport, with the generated clients, like any client built from the protos.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createRegistry, toJsonString, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient, type Interceptor, type Transport } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { file_google_rpc_status } from '../../generated/proto/google/rpc/status_pb.js';
import { file_cloud_common_v1_error } from '../../generated/proto/cloud/common/v1/error_pb.js';
import { OperationSchema } from '../../generated/proto/cloud/common/v1/operation_pb.js';
import { OperationService } from '../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { file_cloud_compute_v1_instance_service } from '../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { ProjectService, file_cloud_iam_v1_project_service } from '../../generated/proto/cloud/iam/v1/project_service_pb.js';
import { ServiceAccountService, file_cloud_iam_v1_service_account_service } from '../../generated/proto/cloud/iam/v1/service_account_service_pb.js';
import { AuthPublicKeyService, file_cloud_iam_v1_auth_public_key_service } from '../../generated/proto/cloud/iam/v1/auth_public_key_service_pb.js';
import { ProfileService, file_cloud_iam_v1_profile_service } from '../../generated/proto/cloud/iam/v1/profile_service_pb.js';
import { TokenExchangeService } from '../../generated/proto/cloud/iam/v1/token_exchange_service_pb.js';
import { signServiceAccountJwt } from '../engines/service-account-jwt/index.js';
import { webhooksCommand } from './webhooks.js';

const GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const JWT_TYPE = 'urn:ietf:params:oauth:token-type:jwt';

/** Every message an Operation's `request` Any may hold, so operations print as readable JSON. */
const registry = createRegistry(
  file_google_rpc_status,
  file_cloud_common_v1_error,
  file_cloud_compute_v1_instance_service,
  file_cloud_iam_v1_project_service,
  file_cloud_iam_v1_service_account_service,
  file_cloud_iam_v1_auth_public_key_service,
  file_cloud_iam_v1_profile_service,
);

class UsageError extends Error {}

const COMMON = `Common options:
  --server URL     the server (env CFS_SERVER, default http://localhost:8080)
  --token TOKEN    the bearer token (env CFS_TOKEN); see "cfs iam get-access-token"
  --help           this help`;

const HELP: Record<string, string> = {
  '': `Usage: cfs <command> [options]

Commands:
  iam get-access-token        sign a user in and print the access token
  iam whoami                  print the caller's profile (ProfileService.Get)
  iam project create          create a project (admins)
  iam project list            list the projects you may see
  iam service-account create  create a service account in a project
  iam key generate            generate a key pair; write the private key to a file
  iam exchange                sign a JWT with a key file and exchange it for an access token
  operation wait <id>         poll an operation until it is done and print it
  webhooks listen|replay      forward a webhook route's captures to a local URL (cfs webhooks --help)

Run "cfs <command> --help" for a command's options.

${COMMON}`,
  'iam get-access-token': `Usage: cfs iam get-access-token --name NAME --password PASSWORD [--server URL]

Signs a user in (POST /api/auth) and prints the access token, for CFS_TOKEN or "Authorization: Bearer".

${COMMON}`,
  'iam whoami': `Usage: cfs iam whoami [--token TOKEN] [--server URL]

Prints ProfileService.Get as JSON: a user, a service account, or anonymous without a token.

${COMMON}`,
  'iam project create': `Usage: cfs iam project create --name NAME [--description TEXT] [--token TOKEN]

Creates a project under the installation's tenant and prints the (already complete) operation.
Its "resourceId" is the new project id.

${COMMON}`,
  'iam project list': `Usage: cfs iam project list [--token TOKEN]

Prints the projects the caller may see, one "<id> <name>" per line.

${COMMON}`,
  'iam service-account create': `Usage: cfs iam service-account create --project PROJECT_ID --name NAME [--description TEXT] [--token TOKEN]

Creates a service account and prints the (already complete) operation. Its "resourceId" is the new
service account id.

${COMMON}`,
  'iam key generate': `Usage: cfs iam key generate --service-account ID --output key.json [--description TEXT] [--force] [--token TOKEN]

Asks the server to generate an RSA 2048 key pair for the service account. The server keeps only the
public key; the private key is written to the output file (mode 0600) as
{"id", "service_account_id", "private_key"} and exists nowhere else. An existing file is kept
unless --force is given. Prints the key id.

${COMMON}`,
  'iam exchange': `Usage: cfs iam exchange --key key.json [--http] [--ttl SECONDS] [--server URL]

Signs a JWT with the key file (RS256, kid = key id, iss = sub = service account id, exp in 5 minutes
or --ttl) and exchanges it for an access token over gRPC (TokenExchangeService.Exchange), or over
HTTP (POST /oauth2/token/exchange) with --http. Prints the access token. Needs no --token.

${COMMON}`,
  'operation wait': `Usage: cfs operation wait <operation-id> [--timeout SECONDS] [--token TOKEN]

Polls OperationService.Get until the operation is done, prints it as JSON, and exits 0 when it
succeeded, 1 when it failed (its status holds the error), 3 on timeout (default 300 s).

${COMMON}`,
};

interface Globals {
  server: string;
  token: string | undefined;
}

function transportFor(globals: Globals): Transport {
  const auth: Interceptor = (next) => (req) => {
    if (globals.token) req.header.set('authorization', `Bearer ${globals.token}`);
    return next(req);
  };
  return createGrpcTransport({ baseUrl: globals.server, interceptors: [auth] });
}

function print(text: string): void {
  process.stdout.write(`${text}\n`);
}

function printMessage<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): void {
  print(toJsonString(schema, message, { registry, prettySpaces: 2 }));
}

function required(values: Record<string, unknown>, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

function needToken(globals: Globals): void {
  if (!globals.token) throw new UsageError('a token is required: --token or CFS_TOKEN (see "cfs iam get-access-token")');
}

async function run(argv: string[]): Promise<number> {
  if (argv[0] === 'webhooks') return webhooksCommand(argv.slice(1));
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      server: { type: 'string' },
      token: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      name: { type: 'string' },
      password: { type: 'string' },
      project: { type: 'string' },
      description: { type: 'string' },
      'service-account': { type: 'string' },
      output: { type: 'string' },
      force: { type: 'boolean' },
      key: { type: 'string' },
      http: { type: 'boolean' },
      ttl: { type: 'string' },
      timeout: { type: 'string' },
    },
  });
  const command = commandOf(positionals);
  if (values.help || command === '') {
    print(HELP[command] ?? HELP['']!);
    return command === '' && !values.help ? 2 : 0;
  }
  const globals: Globals = {
    server: (values.server ?? process.env.CFS_SERVER ?? 'http://localhost:8080').replace(/\/+$/, ''),
    token: values.token ?? (process.env.CFS_TOKEN || undefined),
  };
  const transport = transportFor(globals);

  switch (command) {
    case 'iam get-access-token': {
      const response = await fetch(`${globals.server}/api/auth`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: required(values, 'name'), password: required(values, 'password') }),
      });
      const body = (await response.json().catch(() => ({}))) as { accessToken?: string; message?: string };
      if (response.status !== 200 || !body.accessToken) throw new Error(`sign-in failed (${response.status}): ${body.message ?? 'no token'}`);
      print(body.accessToken);
      return 0;
    }
    case 'iam whoami': {
      printMessage(ProfileService.method.get.output, await createClient(ProfileService, transport).get({}));
      return 0;
    }
    case 'iam project create': {
      needToken(globals);
      const operation = await createClient(ProjectService, transport).create({
        metadata: { name: required(values, 'name') },
        spec: { description: values.description ?? '' },
      });
      printMessage(OperationSchema, operation);
      return operation.status && operation.status.code !== 0 ? 1 : 0;
    }
    case 'iam project list': {
      needToken(globals);
      const projects = createClient(ProjectService, transport);
      let pageToken = '';
      do {
        // An empty parent_id means the installation's tenant.
        const page = await projects.list({ parentId: '', pageToken });
        for (const item of page.items) print(`${item.metadata?.id ?? ''} ${item.metadata?.name ?? ''}`);
        pageToken = page.nextPageToken;
      } while (pageToken !== '');
      return 0;
    }
    case 'iam service-account create': {
      needToken(globals);
      const operation = await createClient(ServiceAccountService, transport).create({
        metadata: { parentId: required(values, 'project'), name: required(values, 'name') },
        spec: { description: values.description ?? '' },
      });
      printMessage(OperationSchema, operation);
      return operation.status && operation.status.code !== 0 ? 1 : 0;
    }
    case 'iam key generate': {
      needToken(globals);
      const output = required(values, 'output');
      const serviceAccountId = required(values, 'service-account');
      const generated = await createClient(AuthPublicKeyService, transport).generate({ spec: { serviceAccountId, description: values.description ?? '' } });
      const file = { id: generated.key?.metadata?.id ?? '', service_account_id: serviceAccountId, private_key: generated.privateKey };
      writeFileSync(output, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600, flag: values.force ? 'w' : 'wx' });
      print(file.id);
      return 0;
    }
    case 'iam exchange': {
      const file = readKeyFile(required(values, 'key'));
      const ttlSeconds = values.ttl === undefined ? undefined : Number(values.ttl);
      if (ttlSeconds !== undefined && !(Number.isInteger(ttlSeconds) && ttlSeconds > 0))
        throw new UsageError('--ttl must be a positive whole number of seconds');
      const jwt = signServiceAccountJwt({ serviceAccountId: file.service_account_id, keyId: file.id, privateKey: file.private_key }, { ttlSeconds });
      if (values.http) {
        const response = await fetch(`${globals.server}/oauth2/token/exchange`, {
          method: 'POST',
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
        return 0;
      }
      const response = await createClient(TokenExchangeService, createGrpcTransport({ baseUrl: globals.server })).exchange({
        grantType: GRANT_TYPE,
        requestedTokenType: ACCESS_TOKEN_TYPE,
        subjectToken: jwt,
        subjectTokenType: JWT_TYPE,
      });
      print(response.accessToken);
      return 0;
    }
    case 'operation wait': {
      needToken(globals);
      const id = positionals[2];
      if (!id) throw new UsageError('the operation id is required: cfs operation wait <id>');
      const timeoutMs = Number(values.timeout ?? 300) * 1000;
      if (!(timeoutMs > 0)) throw new UsageError('--timeout must be a positive number of seconds');
      const operations = createClient(OperationService, transport);
      const deadline = Date.now() + timeoutMs;
      let delay = 100;
      for (;;) {
        const operation = await operations.get({ id });
        if (operation.status) {
          printMessage(OperationSchema, operation);
          return operation.status.code === 0 ? 0 : 1;
        }
        if (Date.now() > deadline) {
          process.stderr.write(`operation ${id} is still running after ${timeoutMs / 1000} s\n`);
          return 3;
        }
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(delay * 2, 2000);
      }
    }
    default:
      throw new UsageError(`unknown command "${command}"; run "cfs --help"`);
  }
}

/** The command words: "iam key generate", "operation wait" (its id follows). */
function commandOf(positionals: string[]): string {
  const [area, first, second] = positionals;
  if (area === undefined) return '';
  if (area === 'operation') return first === undefined ? 'operation wait' : `operation ${first}`;
  if (area === 'iam' && (first === 'service-account' || first === 'key' || first === 'project')) return `iam ${first}${second ? ` ${second}` : ''}`;
  return [area, first].filter(Boolean).join(' ');
}

function readKeyFile(path: string): { id: string; service_account_id: string; private_key: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new UsageError(`cannot read the key file ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const file = parsed as Record<string, unknown>;
  for (const field of ['id', 'service_account_id', 'private_key']) {
    if (typeof file[field] !== 'string' || file[field] === '') throw new UsageError(`the key file ${path} has no "${field}"`);
  }
  return file as { id: string; service_account_id: string; private_key: string };
}

try {
  process.exitCode = await run(process.argv.slice(2));
} catch (error) {
  if (error instanceof UsageError || (error as { code?: unknown }).code?.toString().startsWith('ERR_PARSE_ARGS')) {
    process.stderr.write(`cfs: ${(error as Error).message}\n`);
    process.exitCode = 2;
  } else if (error instanceof ConnectError) {
    process.stderr.write(`cfs: ${Code[error.code]}: ${error.rawMessage}\n`);
    process.exitCode = 1;
  } else {
    process.stderr.write(`cfs: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}
