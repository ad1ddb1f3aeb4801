/**
 * A typed fetch client for any REST API described by openapi-typescript `paths` (the published
 * package's openapi/<name>.d.ts). Written once; each API's client is `createRestClient<paths>(…)`.
 * Paths, methods, path/query parameters, request bodies and every documented response (status and
 * body) are checked by the compiler; nothing is hand-written per API.
 */

/** A body sent as is (text, bytes, form data): whatever fetch itself accepts. */
export type RawBody = NonNullable<RequestInit['body']>;

export type HttpMethod = 'get' | 'put' | 'post' | 'delete' | 'patch' | 'head' | 'options' | 'trace';

/** The paths of `P` that have an operation for `M`. */
export type PathsWith<P, M extends HttpMethod> = {
  [K in keyof P]: P[K] extends Record<M, unknown> ? ([NonNullable<P[K][M]>] extends [never] ? never : K) : never;
}[keyof P];

/** The operation object (parameters, requestBody, responses) of `M` on path `K`. */
export type OperationOf<P, K extends keyof P, M extends HttpMethod> = P[K] extends Record<M, unknown> ? NonNullable<P[K][M]> : never;

type Parameters_<O> = O extends { parameters: infer Params } ? Params : Record<string, never>;
type Present<T> = [Exclude<T, undefined>] extends [never] ? false : true;
type Field<Params, Name extends string> = Params extends Partial<Record<Name, infer Value>> ? Value : never;

type PathOption<O> = Present<Field<Parameters_<O>, 'path'>> extends true ? { path: Exclude<Field<Parameters_<O>, 'path'>, undefined> } : { path?: undefined };
type QueryOption<O> =
  Present<Field<Parameters_<O>, 'query'>> extends true
    ? undefined extends Field<Parameters_<O>, 'query'>
      ? { query?: Exclude<Field<Parameters_<O>, 'query'>, undefined> }
      : { query: Field<Parameters_<O>, 'query'> }
    : { query?: undefined };

type JsonOf<Content> = Content extends { 'application/json': infer Json } ? Json : Content extends Record<string, infer Other> ? Other : never;
/** The JSON request body of an operation (`never` when it takes none). */
export type RequestBodyOf<O> = O extends { requestBody?: infer Body } ? (Exclude<Body, undefined> extends { content: infer Content } ? JsonOf<Content> : never) : never;
type BodyOption<O> = [RequestBodyOf<O>] extends [never]
  ? { body?: undefined }
  : O extends { requestBody: { content: unknown } }
    ? { body: RequestBodyOf<O> | RawBody }
    : { body?: RequestBodyOf<O> | RawBody };

/** What a call takes besides method and path. */
export type CallInit<O> = PathOption<O> &
  QueryOption<O> &
  BodyOption<O> & {
    headers?: Record<string, string>;
    signal?: AbortSignal;
  };

type RequiredKeys<T> = { [K in keyof T]-?: Record<string, never> extends Pick<T, K> ? never : K }[keyof T];
/** The init argument may be left out when nothing in it is required. */
export type InitArgs<O> = [RequiredKeys<CallInit<O>>] extends [never] ? [init?: CallInit<O>] : [init: CallInit<O>];

type ResponsesOf<O> = O extends { responses: infer Responses } ? Responses : never;
type ResponseBody<Response> = Response extends { content: infer Content } ? JsonOf<Content> : undefined;

/** One documented response: `status` narrows `body` to that status's schema. */
export type RestResponse<O> = {
  [Status in keyof ResponsesOf<O>]: {
    status: Status extends number ? Status : number;
    ok: Status extends 200 | 201 | 202 | 203 | 204 | 205 | 206 ? true : Status extends number ? false : boolean;
    body: ResponseBody<ResponsesOf<O>[Status]>;
    headers: Headers;
  };
}[keyof ResponsesOf<O>];

export interface RestClientOptions {
  /** An access token sent as `Authorization: Bearer <token>`; a function is asked before every call. */
  token?: string | (() => string | undefined | Promise<string | undefined>);
  /** Headers sent with every call. */
  headers?: Record<string, string>;
  /** A fetch implementation (default: the global fetch). */
  fetch?: typeof fetch;
}

type Caller<P, M extends HttpMethod> = <K extends PathsWith<P, M>>(path: K, ...init: InitArgs<OperationOf<P, K, M>>) => Promise<RestResponse<OperationOf<P, K, M>>>;

/** A client of one REST API; each method name is the HTTP method. */
export interface RestClient<P> {
  get: Caller<P, 'get'>;
  put: Caller<P, 'put'>;
  post: Caller<P, 'post'>;
  delete: Caller<P, 'delete'>;
  patch: Caller<P, 'patch'>;
  head: Caller<P, 'head'>;
}

function isRawBody(body: unknown): body is RawBody {
  return typeof body === 'string' || body instanceof ArrayBuffer || ArrayBuffer.isView(body) || (typeof Blob !== 'undefined' && body instanceof Blob) || (typeof FormData !== 'undefined' && body instanceof FormData) || (typeof URLSearchParams !== 'undefined' && body instanceof URLSearchParams);
}

/** Builds a typed client for the API whose openapi-typescript `paths` type is `P`. */
export function createRestClient<P>(baseUrl: string, options: RestClientOptions = {}): RestClient<P> {
  const base = baseUrl.replace(/\/+$/, '');
  const send = async (method: HttpMethod, path: string, init: { path?: Record<string, unknown>; query?: Record<string, unknown>; body?: unknown; headers?: Record<string, string>; signal?: AbortSignal } = {}) => {
    const resolved = path.replace(/\{([^}]+)\}/g, (_whole, name: string) => encodeURIComponent(String(init.path?.[name] ?? '')));
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(init.query ?? {})) {
      if (value === undefined || value === null) continue;
      for (const item of Array.isArray(value) ? value : [value]) query.append(name, typeof item === 'object' ? JSON.stringify(item) : String(item));
    }
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers, ...init.headers };
    const token = typeof options.token === 'function' ? await options.token() : options.token;
    if (token) headers.authorization = `Bearer ${token}`;
    let body: RawBody | undefined;
    if (init.body !== undefined) {
      if (isRawBody(init.body)) body = init.body;
      else {
        body = JSON.stringify(init.body);
        headers['content-type'] ??= 'application/json';
      }
    }
    const search = query.toString();
    const response = await (options.fetch ?? fetch)(`${base}${resolved}${search ? `?${search}` : ''}`, { method: method.toUpperCase(), headers, body, signal: init.signal });
    const text = method === 'head' ? '' : await response.text();
    const type = response.headers.get('content-type') ?? '';
    const parsed: unknown = text === '' ? undefined : /[/+]json\b/.test(type) ? JSON.parse(text) : text;
    return { status: response.status, ok: response.ok, body: parsed, headers: response.headers };
  };
  const caller = (method: HttpMethod) => ((path: string, init?: Parameters<typeof send>[2]) => send(method, path, init)) as never;
  return { get: caller('get'), put: caller('put'), post: caller('post'), delete: caller('delete'), patch: caller('patch'), head: caller('head') };
}
