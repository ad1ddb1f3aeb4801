import { Code } from '@connectrpc/connect';
import { GraphQLError } from 'graphql';
import { AppError, isDatabaseUnavailable, isStorageFull, toAppError } from '../../src/errors.js';
import { toConnectError } from '../../src/handlers/cloud/errors.js';
import { renderUserApiError } from '../../src/handlers/users.js';
import { renderProblemDetails } from '../../src/http/problem-details.js';
import { formatPublishingError } from '../../src/handlers/publishing-graphql.js';
import { ServiceError_RetryType as RetryType, ServiceErrorSchema } from '../../generated/proto/cloud/common/v1/error_pb.js';

/** What pg, knex and node:net throw when the database cannot be reached (shapes as they throw them). */
function withCode(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

const refusedDualStack = Object.assign(
  new AggregateError([withCode('connect ECONNREFUSED ::1:5432', 'ECONNREFUSED'), withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')]),
  { message: '' },
);
const knexTimeout = Object.assign(new Error('Knex: Timeout acquiring a connection. The pool is probably full.'), { name: 'KnexTimeoutError' });

const cases: Array<[string, { given: unknown; want: boolean }]> = [
  ['connection refused', { given: withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'), want: true }],
  ['connection refused on both address families', { given: refusedDualStack, want: true }],
  ['connection reset', { given: withCode('read ECONNRESET', 'ECONNRESET'), want: true }],
  ['connect timed out', { given: withCode('connect ETIMEDOUT', 'ETIMEDOUT'), want: true }],
  ["pg's connect timeout", { given: new Error('timeout expired'), want: true }],
  ['server closed the connection', { given: new Error('select 1 - Connection terminated unexpectedly'), want: true }],
  ['no answer within the query timeout', { given: new Error('Query read timeout'), want: true }],
  ['knex pool acquire timeout', { given: knexTimeout, want: true }],
  ['admin shutdown (57P01)', { given: withCode('terminating connection due to administrator command', '57P01'), want: true }],
  ['the database system is starting up (57P03)', { given: withCode('the database system is starting up', '57P03'), want: true }],
  ['connection failure (08006)', { given: withCode('connection failure', '08006'), want: true }],
  ['statement timeout (57014)', { given: withCode('canceling statement due to statement timeout', '57014'), want: true }],
  ['wrapped in a cause', { given: new Error('outer', { cause: withCode('connect ECONNREFUSED', 'ECONNREFUSED') }), want: true }],
  ['unique violation (23505) is no outage', { given: withCode('duplicate key value violates unique constraint', '23505'), want: false }],
  ['syntax error (42601) is no outage', { given: withCode('syntax error at or near', '42601'), want: false }],
  ['a programming error is no outage', { given: new TypeError('cannot read properties of undefined'), want: false }],
  ['a message merely mentioning a timeout is no outage', { given: new Error('request timeout expired for upstream'), want: false }],
  ['not an error', { given: 'ECONNREFUSED', want: false }],
];

/** What PostgreSQL, PGlite and node:fs throw when the store's disk is full (issue 21, item 3). */
const storageCases: Array<[string, { given: unknown; want: boolean }]> = [
  ['PostgreSQL disk_full (53100)', { given: withCode('could not extend file "base/5/16384": No space left on device', '53100'), want: true }],
  ['insufficient_resources (53000)', { given: withCode('insufficient resources', '53000'), want: true }],
  ['io_error (58030)', { given: withCode('could not write to file "pg_wal/xlogtemp.1": Input/output error', '58030'), want: true }],
  ['ENOSPC from node:fs', { given: withCode('ENOSPC: no space left on device, write', 'ENOSPC'), want: true }],
  ['EDQUOT from node:fs', { given: withCode('EDQUOT: disk quota exceeded, write', 'EDQUOT'), want: true }],
  ["PGlite's file layer (an Emscripten ErrnoError)", { given: Object.assign(new Error(''), { name: 'ErrnoError', errno: 28 }), want: true }],
  [
    'a PGlite error with only the message',
    { given: new Error('could not write to file "pg_logical/replorigin_checkpoint.tmp": No space left on device'), want: true },
  ],
  ['wrapped in a cause', { given: new Error('outer', { cause: withCode('disk full', '53100') }), want: true }],
  ['a unique violation is no storage failure', { given: withCode('duplicate key value violates unique constraint', '23505'), want: false }],
  ['a refused connection is no storage failure', { given: withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'), want: false }],
];

describe('isStorageFull', () => {
  test.each(storageCases)('%s', (_name, { given, want }) => {
    expect(isStorageFull(given)).toBe(want);
    if (!want) return;
    // Unavailable everywhere, with a longer Retry-After than a connection blip: space must be freed first.
    expect(isDatabaseUnavailable(given)).toBe(true);
    expect(toAppError(given)).toMatchObject({ code: 'unavailable', retryAfterSeconds: 30 });
    expect(renderUserApiError(toAppError(given))).toMatchObject({ status: 503, headers: { 'retry-after': '30' } });
    expect(toConnectError(given, { service: 'compute', requestId: 'req-1' }).code).toBe(Code.Unavailable);
    const formatted = formatPublishingError(new GraphQLError('disk', { originalError: given as Error }), 'req-1', () => undefined);
    expect(formatted.extensions).toMatchObject({ code: 'UNAVAILABLE', status: 503 });
  });
});

describe('isDatabaseUnavailable', () => {
  test.each(cases)('%s', (_name, { given, want }) => {
    expect(isDatabaseUnavailable(given)).toBe(want);
    if (want) expect(toAppError(given).code).toBe('unavailable');
    else expect(toAppError(given).code).not.toBe('unavailable');
  });
});

describe('an unreachable database in each API’s error shape', () => {
  const unavailable = toAppError(withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'));

  test('it is an AppError "unavailable" that keeps its cause and asks for a retry', () => {
    expect(unavailable).toBeInstanceOf(AppError);
    expect(unavailable).toMatchObject({ code: 'unavailable', retryAfterSeconds: 2 });
    expect(unavailable.cause).toBeInstanceOf(Error);
  });

  test('users API: 503 {statusCode, message, error} with Retry-After, no cause in the body', () => {
    const reply = renderUserApiError(unavailable);
    expect(reply).toMatchObject({ status: 503, headers: { 'retry-after': '2' }, body: { statusCode: 503, error: 'Service Unavailable' } });
    expect(JSON.stringify(reply.body)).not.toMatch(/ECONNREFUSED|5432/);
  });

  test('publishing and webhooks: 503 problem details with Retry-After', () => {
    for (const reply of [renderProblemDetails(unavailable)]) {
      expect(reply).toMatchObject({
        status: 503,
        contentType: 'application/problem+json',
        headers: { 'retry-after': '2' },
        body: { type: 'about:blank', title: 'Service Unavailable', status: 503 },
      });
      expect(JSON.stringify(reply.body)).not.toMatch(/ECONNREFUSED|5432/);
    }
  });

  test('cloud API: UNAVAILABLE with a ServiceError saying retry the call, and retry-after', () => {
    const internal: unknown[] = [];
    const error = toConnectError(withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'), { service: 'compute', requestId: 'req-1' }, (cause) =>
      internal.push(cause),
    );
    expect(error.code).toBe(Code.Unavailable);
    expect(error.rawMessage).not.toMatch(/ECONNREFUSED|5432/);
    expect(error.metadata.get('retry-after')).toBe('2');
    const [detail] = error.findDetails(ServiceErrorSchema);
    expect(detail).toMatchObject({ service: 'compute', code: 'Unavailable', retryType: RetryType.CALL });
    expect(internal).toEqual([]);
  });

  test('GraphQL: extensions.code UNAVAILABLE and status 503, logged as no internal failure', () => {
    const logged: unknown[] = [];
    const wrapped = new GraphQLError('connect ECONNREFUSED 127.0.0.1:5432', { originalError: withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED') });
    const formatted = formatPublishingError(wrapped, 'req-1', (error) => logged.push(error));
    expect(formatted.extensions).toMatchObject({ code: 'UNAVAILABLE', status: 503 });
    expect(formatted.message).not.toMatch(/ECONNREFUSED/);
    expect(logged).toEqual([]);
  });
});
