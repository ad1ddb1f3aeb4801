import { create, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import type { HandlerContext, Interceptor, MethodImplSpec, UnaryRequest, UnaryResponse } from '@connectrpc/connect';
import type { CallContext } from './call-context.js';

/** A unary method as registered on the Connect router: its descriptor and implementation. */
export type UnarySpec = Extract<MethodImplSpec, { kind: 'unary' }>;
type AnyFn = Parameters<Interceptor>[0];

/**
 * connect's `invokeUnaryImplementation` (same request and response shapes through the same
 * interceptors, the output normalized with `create`, response header and trailer copied back),
 * except that the request's signal is read from the context only when someone asks for it.
 */
export async function invokeUnary(spec: UnarySpec, context: CallContext, input: MessageShape<DescMessage>, interceptors: readonly Interceptor[]) {
  const method = spec.method;
  let next: AnyFn = async (anyRequest) => {
    const req = anyRequest as UnaryRequest;
    // The implementation sees the request as the interceptors left it (connect's mergeRequest).
    const same = req.header === context.requestHeader && req.contextValues === context.values && req.service === context.service;
    const implContext: HandlerContext = same
      ? context
      : {
          method: context.method,
          protocolName: context.protocolName,
          requestMethod: context.requestMethod,
          url: context.url,
          timeoutMs: () => context.timeoutMs(),
          responseHeader: context.responseHeader,
          responseTrailer: context.responseTrailer,
          service: req.service,
          requestHeader: req.header,
          values: req.contextValues,
          get signal() {
            return req.signal;
          },
        };
    const output = await spec.impl(req.message, implContext);
    const response: UnaryResponse = {
      stream: false,
      service: method.parent,
      method,
      // The context's own header and trailer, made only if someone reads them.
      get header() {
        return context.responseHeader;
      },
      get trailer() {
        return context.responseTrailer;
      },
      message: create(method.output, output),
    };
    answered = response;
    return response;
  };
  let answered: UnaryResponse | undefined;
  for (let index = interceptors.length - 1; index >= 0; index--) next = interceptors[index]!(next);
  const request: UnaryRequest = {
    stream: false,
    message: input,
    method,
    service: method.parent,
    requestMethod: context.requestMethod,
    url: context.url,
    header: context.requestHeader,
    contextValues: context.values,
    get signal() {
      return context.signal;
    },
  };
  const response = (await next(request)) as UnaryResponse;
  // An interceptor that answered another header or trailer (a replay) replaces the context's, as in connect.
  if (response !== answered) {
    copyHeaders(response.header, context.responseHeader);
    copyHeaders(response.trailer, context.responseTrailer);
  }
  return response.message;
}

function copyHeaders(from: Headers, to: Headers): void {
  if (from === to) return;
  for (const key of [...to.keys()]) to.delete(key);
  from.forEach((value, key) => to.set(key, value));
}
