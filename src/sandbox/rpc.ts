import { Code, type Interceptor } from '@connectrpc/connect';
import { AppError, type ErrorCode } from '../errors.js';
import { apiServiceNameOf, toConnectError } from '../handlers/cloud/errors.js';

/**
 * The errors a cloud RPC answers (docs/cloud-api.md, "Errors"), by gRPC code name, and the domain
 * code the services raise for each: the service's own error interceptor renders it with its
 * ServiceError detail, exactly as a real failure.
 */
const PREFERRED_CODES: Partial<Record<keyof typeof Code, ErrorCode>> = {
  InvalidArgument: 'invalid_argument',
  Unauthenticated: 'unauthenticated',
  PermissionDenied: 'permission_denied',
  NotFound: 'not_found',
  AlreadyExists: 'already_exists',
  FailedPrecondition: 'failed_precondition',
  Aborted: 'aborted',
  ResourceExhausted: 'resource_exhausted',
  Unimplemented: 'unimplemented',
  Internal: 'internal',
  Unavailable: 'unavailable',
};

/** `NOT_FOUND`, `not_found`, `NotFound` and `5` all name Code.NotFound. */
function codeNamed(value: string): keyof typeof Code | undefined {
  const names = Object.keys(Code).filter((name) => Number.isNaN(Number(name))) as Array<keyof typeof Code>;
  if (/^\d+$/.test(value)) return names.find((name) => Code[name] === Number(value));
  const wanted = value.replace(/_/g, '').toLowerCase();
  return names.find((name) => name.toLowerCase() === wanted);
}

/** The gRPC code names `prefer: code=` accepts, as clients spell them. */
const PREFERRED_CODE_NAMES = Object.keys(PREFERRED_CODES).map((name) => name.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase());

/**
 * The sandbox's RPC interceptor, innermost (after authentication and the service's other
 * interceptors): a call with `prefer: code=NOT_FOUND` (header or metadata) fails with that code and
 * its ServiceError detail (the resource id from the request's `id`, when it has one) without
 * running the method; `code=OK` or no `prefer` runs it. A code the cloud API never answers is
 * INVALID_ARGUMENT naming those it does.
 */
export function preferInterceptor(): Interceptor {
  return (next) => (req) => {
    const origin = { service: apiServiceNameOf(req.service), requestId: req.header.get('x-request-id') ?? '' };
    const header = req.header.get('prefer');
    const code = header ? /(?:^|[,;\s])code=([\w-]+)/i.exec(header)?.[1] : undefined;
    if (code === undefined) return next(req);
    const name = codeNamed(code);
    if (code.toUpperCase() === 'OK' || code === '0') return next(req);
    const errorCode = name ? PREFERRED_CODES[name] : undefined;
    if (!errorCode) {
      const refusal = new AppError(
        'invalid_argument',
        `prefer: code=${code} is not an error the cloud API answers; use one of ${PREFERRED_CODE_NAMES.join(', ')}`,
        {
          violations: [{ field: 'prefer', message: `code must be one of ${PREFERRED_CODE_NAMES.join(', ')}` }],
        },
      );
      throw toConnectError(refusal, origin);
    }
    const message = (req.message as { id?: unknown }).id;
    const preferred = new AppError(
      errorCode,
      `sandbox: ${req.method.name} answered ${code.toUpperCase()} because the call asked for it (prefer: code=${code})`,
      {
        resourceId: typeof message === 'string' ? message : undefined,
        retryAfterSeconds: errorCode === 'unavailable' || errorCode === 'resource_exhausted' ? 1 : undefined,
      },
    );
    // Rendered here, as the service's error interceptor would (which passes it through unchanged):
    // services without one (ServerInfoService) answer it just the same.
    throw toConnectError(preferred, origin);
  };
}
