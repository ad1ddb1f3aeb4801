import { fromBinary, toJson, type DescMethod, type DescService, type JsonValue } from '@bufbuild/protobuf';
import type { Interceptor, UnaryRequest, UnaryResponse } from '@connectrpc/connect';
import { OperationSchema, type Operation } from '../../../generated/proto/cloud/common/v1/operation_pb.js';
import { OperationService } from '../../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { AppError } from '../../errors.js';
import { resolvePrincipal, type PrincipalResolver } from '../../auth/principal.js';
import { assertIdempotencyKey, hashedIdempotencyKey, requestHash, type IdempotencyKeys, type PendingKey } from '../../engines/operations/index.js';
import { endpointKey, pendingKeyKey, principalKey, resetMaskForHash } from './context.js';
import { apiServiceNameOf, toConnectError } from './errors.js';

/** Services with this `api_service_name` answer on every endpoint (OperationService). */
const EVERY_ENDPOINT = '*';

/**
 * Outermost interceptor: renders every error of a cloud RPC as a ConnectError with a ServiceError
 * detail (errors.ts), so services throw AppError and never think about the wire.
 */
export function createErrorInterceptor(options: { onInternal(cause: unknown, requestId: string): void }): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (error) {
      const requestId = req.header.get('x-request-id') ?? '';
      throw toConnectError(error, { service: apiServiceNameOf(req.service), requestId }, (cause) => options.onInternal(cause, requestId));
    }
  };
}

/** The endpoint name of a host under the API domain (`compute.api.example.com` → `compute`), port ignored. */
export function endpointOfHost(url: string, apiDomain: string | undefined): string | undefined {
  if (apiDomain === undefined) return undefined;
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    return undefined;
  }
  const suffix = `.${apiDomain}`;
  return host.endsWith(suffix) && host.length > suffix.length ? host.slice(0, -suffix.length) : undefined;
}

/**
 * Virtual hosts (docs/cloud-api.md, "Endpoints"): on `<name>.<API_DOMAIN>` only services whose
 * `api_service_name` is `<name>` (and "*" ones, which then see only that endpoint's operations)
 * answer; others → UNIMPLEMENTED, as a server without the service would answer. Hosts outside the
 * API domain (localhost, an IP) reach every service.
 */
export function createEndpointInterceptor(options: { apiDomain: string | undefined }): Interceptor {
  // Not async: a call that passes costs no promise of its own (a refusal throws into the caller's await).
  return (next) => (req) => {
    const endpoint = endpointOfHost(req.url, options.apiDomain);
    if (endpoint !== undefined) {
      const name = apiServiceNameOf(req.service);
      if (name !== EVERY_ENDPOINT && name !== endpoint) {
        throw new AppError('unimplemented', `${req.service.typeName} is not served on ${endpoint}.${options.apiDomain}; use ${name}.${options.apiDomain}`);
      }
      req.contextValues.set(endpointKey, endpoint);
    }
    return next(req);
  };
}

/**
 * How a method treats the bearer token: `required` (every cloud RPC unless declared otherwise),
 * `optional` (no Authorization header → the handler runs without a principal, e.g. ProfileService.Get
 * answering anonymously; a header that is present must still be valid), `public` (never looked at:
 * the token exchange, which is how a service account gets a token in the first place).
 */
export type AuthPolicy = 'required' | 'optional' | 'public';

/** Every cloud RPC needs `Authorization: Bearer` unless its policy says otherwise; the principal goes into the context for handlers. */
export function createAuthInterceptor(options: {
  resolvers: readonly PrincipalResolver[];
  policyOf?(service: DescService, method: DescMethod): AuthPolicy;
}): Interceptor {
  return (next) => async (req) => {
    const policy = options.policyOf?.(req.service, req.method) ?? 'required';
    if (policy === 'public') return next(req);
    const authorization = req.header.get('authorization');
    if (policy === 'optional' && authorization === null) return next(req);
    const principal = await resolvePrincipal(options.resolvers, authorization);
    req.contextValues.set(principalKey, principal);
    return next(req);
  };
}

/**
 * Reads, by the cloud API's method names (contracts/proto/cloud): Get…, List… and Wait. Every other
 * method changes state, whether it answers an Operation or not (AuthPublicKeyService.Generate),
 * except OperationService's own: Get and Wait read, and Cancel is idempotent by itself (cancelling
 * twice answers the same), so none of them records an idempotency key.
 */
const READ_METHOD = /^(Get|List)|^Wait$/;

function isMutatingMethod(service: DescService, method: Pick<DescMethod, 'name'>): boolean {
  return service.typeName !== OperationService.typeName && !READ_METHOD.test(method.name);
}

/** JSON with object keys sorted, so equal messages hash equally whatever their map order. */
function stableStringify(value: JsonValue): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${stableStringify(value[key] as JsonValue)}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * `X-Idempotency-Key` on every mutating method: the same key from the same principal on the same
 * method answers with the same Operation (its current state) and the work runs once, also for
 * concurrent duplicates; the same key with another request → INVALID_ARGUMENT. Reads ignore it, and
 * so do methods called without a principal (the token exchange). The key is written by the
 * transaction that records the operation (IdempotencyKeys.runAtomic): the pending key is set on the
 * request's context, and the handler passes it to the service in the operation's input
 * (operationCallOf). A method whose answer is not its Operation (Generate) keeps its answer with the
 * key (PendingKey.answer), sealed under the
 * caller's key, which is stored only as a hash; a retry gets that answer again.
 */
export function createIdempotencyInterceptor(options: { keys: IdempotencyKeys; loadOperation(id: string): Promise<Operation> }): Interceptor {
  // Reads (and calls without a key) pass straight on, without a promise of this interceptor's own.
  return (next) => {
    const idempotent = async (req: UnaryRequest, key: string): Promise<UnaryResponse> => {
      assertIdempotencyKey(key);
      const principal = req.contextValues.get(principalKey);
      if (!principal) throw new AppError('unauthenticated', 'a bearer token is required');
      const method = `/${req.service.typeName}/${req.method.name}`;
      const answersOperation = req.method.output.typeName === OperationSchema.typeName;
      const hash = requestHash(
        method,
        stableStringify(toJson(req.method.input, req.message)),
        resetMaskForHash({ values: req.contextValues, requestHeader: req.header }),
      );
      let response: UnaryResponse | undefined;
      const scope = { principal: principal.id, method, key: answersOperation ? key : hashedIdempotencyKey(key) };
      const execute = async (pending: PendingKey) => {
        // The key travels with the request's context to the handler, which passes it to the service.
        req.contextValues.set(pendingKeyKey, pending);
        const answer = await next(req);
        if (answer.stream) throw new Error('a mutating method must be unary');
        response = answer;
        return answersOperation ? (answer.message as Operation).id : undefined;
      };
      const result = await options.keys.runAtomic(scope, hash, execute, answersOperation ? {} : { sealWith: key });
      if (!result.replayed && response) return response;
      let message: UnaryResponse['message'];
      if (answersOperation) message = await options.loadOperation(result.operationId);
      else if (result.answer) message = fromBinary(req.method.output, result.answer);
      else throw new AppError('failed_precondition', `the answer to the request with this X-Idempotency-Key (operation ${result.operationId}) was not kept`);
      const replay: UnaryResponse = { stream: false, service: req.service, method: req.method, ...replayResponseMetadata(req.header), message };
      return replay;
    };
    return (req) => {
      if (req.stream || !isMutatingMethod(req.service, req.method)) return next(req);
      const key = req.header.get('x-idempotency-key');
      // No principal: a public method (the token exchange), which changes nothing a key could scope.
      if (key === null || !req.contextValues.get(principalKey)) return next(req);
      return idempotent(req, key);
    };
  };
}

/**
 * The response header and trailer of a replayed call. connect replaces the protocol's own response
 * header and trailer with the ones an interceptor answers (`copyHeaders` clears them first), and on a
 * replay the implementation that would have handed back connect's own never runs. So what connect
 * set from the request is set again, by its rules: the Content-Type, and for gRPC / gRPC-Web the
 * `grpc-status: 0` trailer. Without them a replay had no Content-Type (Connect) or no status (gRPC-Web,
 * gRPC over connect-node), and clients refused it.
 */
function replayResponseMetadata(requestHeader: Headers): { header: Headers; trailer: Headers } {
  const header = new Headers({ 'x-idempotent-replay': 'true' });
  const trailer = new Headers();
  const match = /^application\/(grpc-web|grpc|proto|json)(?:\+(proto|json))?\s*(?:;|$)/i.exec(requestHeader.get('content-type') ?? '');
  if (match) {
    const kind = (match[1] ?? '').toLowerCase();
    const codec = (match[2] ?? 'proto').toLowerCase();
    const grpcFamily = kind === 'grpc' || kind === 'grpc-web';
    header.set('content-type', grpcFamily ? `application/${kind}+${codec}` : `application/${kind}`);
    if (grpcFamily) trailer.set('grpc-status', '0');
  }
  return { header, trailer };
}
