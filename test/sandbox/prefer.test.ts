import { OpenAPIBackend, type Operation } from 'openapi-backend';
import { loadContractDocuments } from '../../src/http/contract-documents.js';
import { AppError } from '../../src/errors.js';
import type { RestReply } from '../../src/http/reply.js';
import { renderUserApiError } from '../../src/handlers/users.js';
import { preferenceOf, preferredReply, ResponseChecker, sandboxHandler } from '../../src/sandbox/rest.js';

/** Every operation of every REST document, dereferenced as the server's engines hold them. */
async function operationsOf(): Promise<Array<{ contract: string; operation: Operation }>> {
  const all: Array<{ contract: string; operation: Operation }> = [];
  for (const { name, document } of loadContractDocuments()) {
    const api = new OpenAPIBackend({ definition: document as never, quick: true });
    await api.init();
    for (const operation of api.router.getOperations()) all.push({ contract: name, operation });
  }
  return all;
}

const checker = new ResponseChecker();

describe('Prefer (Prism spelling) on REST operations', () => {
  let operations: Array<{ contract: string; operation: Operation }>;
  beforeAll(async () => {
    operations = await operationsOf();
  });

  test('parses code, example and dynamic, comma- or semicolon-separated', () => {
    expect(preferenceOf('code=404')).toEqual({ code: '404' });
    expect(preferenceOf('code=200, example="default"; dynamic=true')).toEqual({ code: '200', example: 'default', dynamic: true });
    expect(preferenceOf('return=minimal')).toBeUndefined();
    expect(preferenceOf(undefined)).toBeUndefined();
  });

  test('every documented response of every operation, static and dynamic, is valid against its contract', () => {
    const failures: string[] = [];
    let answers = 0;
    for (const { contract, operation } of operations) {
      for (const code of Object.keys(operation.responses ?? {})) {
        if (!/^\d{3}$/.test(code)) continue;
        for (const dynamic of [false, true, true]) {
          const reply = preferredReply(operation, { code, dynamic });
          answers++;
          expect(reply.status).toBe(Number(code));
          const problems = checker.problems(operation, reply);
          if (problems.length > 0)
            failures.push(`${contract} ${operation.operationId} ${code} dynamic=${dynamic}: ${problems.join('; ')} ${JSON.stringify(reply.body)}`);
        }
      }
    }
    expect(failures).toEqual([]);
    // Three documents, each operation with several responses.
    expect(answers).toBeGreaterThan(150);
  });

  test('the static answer is the documented example, and `example=default` names it', () => {
    const { operation } = operations.find((entry) => entry.operation.operationId === 'getServiceInfo')!;
    expect(preferredReply(operation, { code: '200' }).body).toEqual({ name: 'contract-first-server', version: '1.0.0' });
    expect(preferredReply(operation, { example: 'default' }).body).toEqual({ name: 'contract-first-server', version: '1.0.0' });
    expect(preferredReply(operation, { code: '200' }).headers?.['preference-applied']).toBe('code=200');
  });

  test('an undocumented code or an unknown example is a 400 naming what exists', () => {
    const { operation } = operations.find((entry) => entry.operation.operationId === 'getUser')!;
    expect(() => preferredReply(operation, { code: '418' })).toThrow(/it documents 200, 401, 404/);
    expect(() => preferredReply(operation, { code: '404', example: 'nope' })).toThrow(AppError);
    try {
      preferredReply(operation, { code: '418' });
    } catch (error) {
      expect(renderUserApiError(error as AppError)).toMatchObject({ status: 400, body: { details: [{ field: 'header.prefer' }] } });
    }
  });
});

describe('response validation in sandbox mode', () => {
  let getUser: Operation;
  beforeAll(async () => {
    getUser = (await operationsOf()).find((entry) => entry.operation.operationId === 'getUser')!.operation;
  });
  const call = {
    operationId: 'getUser',
    params: {},
    query: {},
    body: undefined,
    headers: {},
    remoteAddress: '',
    client: {} as never,
    requestId: 'r-1',
    security: {},
  };

  test('a body outside the contract is a 500 naming the operation, and the violation is reported', async () => {
    const violations: string[] = [];
    const wrong: RestReply = { status: 200, body: { id: 42, name: ['not', 'a', 'string'] } };
    const handler = sandboxHandler(getUser, () => wrong, renderUserApiError, { checker, onViolation: (violation) => violations.push(violation.message) });
    const reply = await handler(call);
    expect(reply.status).toBe(500);
    expect((reply.body as { message: string }).message).toMatch(/getUser answered 200 outside its contract/);
    expect(violations).toHaveLength(1);
    expect(violations[0]).toMatch(/getUser answered 200 outside its contract: body/);
  });

  test('an undocumented status is a violation too; a valid answer passes untouched', async () => {
    const violations: string[] = [];
    const onViolation = (violation: Error) => violations.push(violation.message);
    const teapot = sandboxHandler(getUser, () => ({ status: 418, body: {} }), renderUserApiError, { checker, onViolation });
    expect((await teapot(call)).status).toBe(500);
    expect(violations[0]).toMatch(/status 418 is not documented \(200, 401, 404\)/);
    const valid = preferredReply(getUser, { code: '200' });
    const fine = sandboxHandler(getUser, () => valid, renderUserApiError, { checker, onViolation });
    expect(await fine(call)).toBe(valid);
    expect(violations).toHaveLength(1);
  });

  test('a service error is rendered in the API shape and checked; Prefer skips the handler', async () => {
    let ran = 0;
    const handler = sandboxHandler(
      getUser,
      () => {
        ran++;
        throw new AppError('not_found', 'no such user');
      },
      renderUserApiError,
      { checker, onViolation: () => undefined },
    );
    expect(await handler(call)).toMatchObject({ status: 404, body: { statusCode: 404, message: 'no such user' } });
    expect(ran).toBe(1);
    const preferred = await handler({ ...call, headers: { prefer: 'code=401' } });
    expect(preferred).toMatchObject({ status: 401, body: { statusCode: 401 } });
    expect(ran).toBe(1);
  });
});
