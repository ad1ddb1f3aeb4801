import { startServer, type TestServer } from '../support/app.js';

// A body of many unknown properties is refused with a bounded answer: at most 100 violations, each
// field name at most 1,024 characters, as the error schemas promise (maxItems, maxLength; the
// OWASP lint asks every array and string to be bounded, docs/contracts.md).

let server: TestServer | undefined;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server?.close());

test('500 unknown properties with 2,000-character names answer 100 violations of at most 1,024-character fields, valid against the contract', async () => {
  const body: Record<string, string> = { name: 'alice', password: 'correct horse battery' };
  for (let index = 0; index < 500; index++) body[`${String(index).padStart(4, '0')}${'x'.repeat(1996)}`] = 'y';
  // Checked against the contract (the default): the 400 must match ErrorBody's bounds.
  const response = await server!.request('POST', '/api/auth', { body });
  expect(response.status).toBe(400);
  const details = response.body.details as { field: string; message: string }[];
  expect(details).toHaveLength(100);
  for (const detail of details) {
    expect(detail.field.length).toBe(1024);
    expect(detail.message).toBe('is not a known property');
  }
});
