/**
 * The client-side layer of the cloud API, what the Nebius SDKs give their users (docs/cloud-api.md,
 * "The SDK layer"): idempotency keys on every mutating call, retries decided by the server's answer
 * within a deadline, `wait(operation)` (server-side) and `cancel(operation)`, service-account credentials refreshed in the background,
 * and List calls that iterate over every page. Shipped in the contracts package
 * (`@contract-first-server/contracts/sdk`) and used by `cfs`.
 *
 *   const sdk = createCloudSdk({ baseUrl, transport: createGrpcTransport, credentials: { serviceAccountKey } });
 *   const instances = sdk.client(InstanceService);
 *   const instance = await sdk.wait(await instances.create({ metadata: { parentId, name: 'vm' } }));
 *   for await (const each of instances.list({ parentId })) console.log(each.metadata?.name);
 */
import type { DescMessage, DescMethodUnary, DescService, Message, MessageInitShape, MessageShape } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient, type CallOptions, type Interceptor, type Transport } from '@connectrpc/connect';
import type { Operation } from '../../generated/proto/cloud/common/v1/operation_pb.js';
import { OperationService } from '../../generated/proto/cloud/common/v1/operation_service_pb.js';
import { TokenExchangeService } from '../../generated/proto/cloud/iam/v1/token_exchange_service_pb.js';
import { ServiceAccountCredentials, staticToken, type ServiceAccountCredentialsOptions, type ServiceAccountKey, type TokenSource } from './credentials.js';
import { cancelOperation, waitForOperation, type WaitOptions } from './operations.js';
import { pageable, pagedField, type Pageable } from './paging.js';
import { createIdempotencyInterceptor, createRetryInterceptor, type RetryOptions } from './retry.js';

export { OperationError, describeServiceErrors, requestIdOf, serviceErrorsOf } from './errors.js';
export { ServiceAccountCredentials, parseServiceAccountKey, signServiceAccountKeyJwt, staticToken } from './credentials.js';
export type { ServiceAccountCredentialsOptions, ServiceAccountKey, TokenSource } from './credentials.js';
export { IDEMPOTENCY_KEY_HEADER, backoffMs, createIdempotencyInterceptor, createRetryInterceptor, isMutating, isRetriable } from './retry.js';
export type { RetryOptions } from './retry.js';
export { cancelOperation, waitForOperation } from './operations.js';
export type { WaitOptions } from './operations.js';
export { pageable, pagedField } from './paging.js';
export { resetMaskFromMessage } from './reset-mask.js';
export type { Pageable } from './paging.js';

/** A Connect transport factory: createGrpcTransport (connect-node), createConnectTransport (connect-web)... */
export type TransportFactory = (options: { baseUrl: string; interceptors: Interceptor[] }) => Transport;

export type Credentials =
  | TokenSource
  /** A fixed bearer token (a user's sign-in token). */
  | { token: string }
  /** A service account's key file (parseServiceAccountKey), exchanged and refreshed automatically. */
  | { serviceAccountKey: ServiceAccountKey; options?: ServiceAccountCredentialsOptions };

export interface CloudSdkOptions {
  baseUrl: string;
  transport: TransportFactory;
  /** None: anonymous calls (ProfileService.Get, TokenExchangeService.Exchange). */
  credentials?: Credentials;
  retry?: RetryOptions;
  /** Run once per attempt, after the token is set: logging, metrics, or faults injected by a test. */
  interceptors?: Interceptor[];
}

type ItemOf<Page> = Page extends { items: Array<infer Item> } ? Item : Page extends { operations: Array<infer Item> } ? Item : never;

type SdkMethod<M> =
  M extends DescMethodUnary<infer I extends DescMessage, infer O extends DescMessage>
    ? MessageShape<O> extends { nextPageToken: string }
      ? (request?: MessageInitShape<I>, options?: CallOptions) => Pageable<MessageShape<O>, ItemOf<MessageShape<O>>>
      : (request?: MessageInitShape<I>, options?: CallOptions) => Promise<MessageShape<O>>
    : never;

/** A connect client whose List methods are Pageable. */
export type SdkClient<S extends DescService> = { [K in keyof S['method']]: SdkMethod<S['method'][K]> };

export interface CloudSdk {
  readonly transport: Transport;
  client<S extends DescService>(service: S): SdkClient<S>;
  /**
   * Waits until the operation is done, with OperationService.Wait (polling Get against a server
   * without it); the final Operation, or throws OperationError (a cancelled one included).
   */
  wait(operation: Operation, options?: WaitOptions): Promise<Operation>;
  /** Asks the server to cancel a running operation; answers it (CANCELLED once its work stopped, else still running). */
  cancel(operation: Operation | string): Promise<Operation>;
  /** The token source in use, if any. */
  readonly credentials: TokenSource | undefined;
  /** Stops background token refresh. */
  close(): void;
}

/**
 * Interceptor order (the first runs outermost): the idempotency key is set once per call, then
 * retries, then per attempt the bearer token (fresh from the cache each time) and the caller's
 * interceptors.
 */
export function createCloudSdk(options: CloudSdkOptions): CloudSdk {
  const retry = createRetryInterceptor(options.retry);
  const credentials = tokenSourceOf(options);
  const interceptors = [createIdempotencyInterceptor(), retry, ...(credentials ? [createAuthInterceptor(credentials)] : []), ...(options.interceptors ?? [])];
  const transport = options.transport({ baseUrl: options.baseUrl, interceptors });
  const operations = createClient(OperationService, transport);
  return {
    transport,
    credentials,
    client: (service) => sdkClient(service, transport),
    wait: (operation, waitOptions) => waitForOperation(operations, operation, waitOptions),
    cancel: (operation) => cancelOperation(operations, operation),
    close: () => credentials?.close?.(),
  };
}

function tokenSourceOf(options: CloudSdkOptions): TokenSource | undefined {
  const given = options.credentials;
  if (given === undefined) return undefined;
  if ('token' in given && typeof given.token === 'string') return staticToken(given.token);
  if ('serviceAccountKey' in given) {
    // The exchange retries like any call but carries no token of its own.
    const exchangeTransport = options.transport({
      baseUrl: options.baseUrl,
      interceptors: [createRetryInterceptor(options.retry), ...(options.interceptors ?? [])],
    });
    return new ServiceAccountCredentials(given.serviceAccountKey, createClient(TokenExchangeService, exchangeTransport), given.options);
  }
  return given as TokenSource;
}

/**
 * Sets `authorization` per attempt. A token the server refuses (UNAUTHENTICATED) is dropped from the
 * cache and the call is sent once more with a new one (gosdk auth.UnaryClientInterceptor: HandleError,
 * then "retry grpc call with new credentials"); a fixed token cannot be renewed, so it is not retried.
 */
function createAuthInterceptor(credentials: TokenSource): Interceptor {
  return (next) => async (req) => {
    const token = await credentials.token();
    req.header.set('authorization', `Bearer ${token}`);
    try {
      return await next(req);
    } catch (error) {
      if (!(error instanceof ConnectError && error.code === Code.Unauthenticated && credentials.invalidate)) throw error;
      credentials.invalidate(token);
      req.header.set('authorization', `Bearer ${await credentials.token()}`);
      return next(req);
    }
  };
}

function sdkClient<S extends DescService>(service: S, transport: Transport): SdkClient<S> {
  const client = createClient(service, transport) as unknown as Record<string, (request?: object, options?: CallOptions) => Promise<Message>>;
  const wrapped: Record<string, unknown> = { ...client };
  for (const method of service.methods) {
    const items = pagedField(method);
    const call = client[method.localName];
    if (items === undefined || call === undefined) continue;
    wrapped[method.localName] = (request: Record<string, unknown> = {}, callOptions?: CallOptions) =>
      pageable<DescMessage, DescMessage, unknown>((page) => call(page, callOptions), request, items);
  }
  return wrapped as SdkClient<S>;
}
