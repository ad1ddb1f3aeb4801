import { BodyCollector, captureWebhookRequest, describeCapturedRequest, type CaptureInput } from '../../../src/engines/webhook-capture/index.js';

const ROUTE = '0b6f4a57-3f55-4d1e-9e8a-3c2f5b1d7a90';

function input(overrides: Partial<CaptureInput> = {}): CaptureInput {
  return {
    id: '3d0c5d0e-8f43-4b7e-a4cc-1f0e2d6b9a11',
    routeId: ROUTE,
    receivedAt: new Date('2026-11-22T17:01:02.345Z'),
    method: 'POST',
    target: `/${ROUTE}`,
    rawHeaders: ['Host', 'example.test'],
    body: { bytes: Buffer.alloc(0), size: 0, truncated: false },
    remoteAddress: '127.0.0.1',
    httpVersion: '1.1',
    ...overrides,
  };
}

function body(text: string | Buffer) {
  const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text);
  return { bytes, size: bytes.length, truncated: false };
}

const cases: Array<[string, { given: Partial<CaptureInput>; want: Record<string, unknown> }]> = [
  [
    'a target without a query has an empty raw query and no parameters',
    { given: { target: `/${ROUTE}/a/b` }, want: { path: `/${ROUTE}/a/b`, query: '', queryParams: {} } },
  ],
  [
    'a query is kept raw and parsed into every value of every name, in order',
    { given: { target: `/${ROUTE}?a=1&b=%20x&a=2&flag` }, want: { query: 'a=1&b=%20x&a=2&flag', queryParams: { a: ['1', '2'], b: [' x'], flag: [''] } } },
  ],
  [
    'header lines keep their order, letter case and duplicates',
    {
      given: { rawHeaders: ['Host', 'h', 'X-A', '1', 'x-a', '2', 'X-B', '3'] },
      want: {
        headers: [
          ['Host', 'h'],
          ['X-A', '1'],
          ['x-a', '2'],
          ['X-B', '3'],
        ],
      },
    },
  ],
  [
    'the content type is the first Content-Type line, whatever its case',
    { given: { rawHeaders: ['content-TYPE', 'text/csv', 'Content-Type', 'x/y'] }, want: { contentType: 'text/csv' } },
  ],
  ['no Content-Type line means a null content type', { given: {}, want: { contentType: null } }],
  [
    'a UTF-8 body is shown as text and base64',
    { given: { body: body('héllo ✓') }, want: { body: 'héllo ✓', bodyBase64: Buffer.from('héllo ✓').toString('base64'), size: 10, json: null, form: null } },
  ],
  ['invalid UTF-8 has no text, only base64', { given: { body: body(Buffer.from([0xff, 0xfe, 0x00, 0x41])) }, want: { body: null, bodyBase64: '//4AQQ==' } }],
  [
    'a declared JSON body is parsed whatever JSON value it holds',
    { given: { rawHeaders: ['Content-Type', 'application/vnd.api+json; charset=utf-8'], body: body('"just a string"') }, want: { json: 'just a string' } },
  ],
  [
    'an undeclared body that is a JSON object is parsed too',
    { given: { rawHeaders: ['Content-Type', 'application/x-www-form-urlencoded'], body: body('{"a":1}') }, want: { json: { a: 1 } } },
  ],
  ['broken JSON is not parsed', { given: { rawHeaders: ['Content-Type', 'application/json'], body: body('{"a":') }, want: { json: null, body: '{"a":' } }],
  [
    'a urlencoded body is parsed as a form, plus signs as spaces',
    {
      given: { rawHeaders: ['Content-Type', 'application/x-www-form-urlencoded'], body: body('a=1+2&a=%263&b=') },
      want: { form: { a: ['1 2', '&3'], b: [''] }, json: null },
    },
  ],
  [
    'a truncated body is never parsed as JSON',
    {
      given: { rawHeaders: ['Content-Type', 'application/json'], body: { bytes: Buffer.from('{"a":1}'), size: 100, truncated: true } },
      want: { json: null, size: 100, truncated: true },
    },
  ],
  ['an IPv4 peer on a dual-stack socket is shown as IPv4', { given: { remoteAddress: '::ffff:10.0.0.7' }, want: { remoteAddress: '10.0.0.7' } }],
  ['an IPv6 peer is kept', { given: { remoteAddress: '::1', httpVersion: '2.0' }, want: { remoteAddress: '::1', httpVersion: '2.0' } }],
  ['any method name is kept as sent', { given: { method: 'PURGE' }, want: { method: 'PURGE' } }],
];

describe('captureWebhookRequest + describeCapturedRequest', () => {
  test.each(cases)('%s', (_name, { given, want }) => {
    const view = describeCapturedRequest(captureWebhookRequest(input(given)));
    expect(JSON.parse(JSON.stringify(view))).toMatchObject(want);
  });

  test('the record keeps the exact body bytes (not a copy that could differ)', () => {
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, index) => index));
    const record = captureWebhookRequest(input({ body: body(bytes) }));
    expect(record.body.equals(bytes)).toBe(true);
    expect(Buffer.from(describeCapturedRequest(record).bodyBase64, 'base64').equals(bytes)).toBe(true);
  });
});

describe('BodyCollector', () => {
  const table: Array<[string, { given: { limit: number; chunks: string[] }; want: { kept: string; size: number; truncated: boolean } }]> = [
    ['an empty body', { given: { limit: 10, chunks: [] }, want: { kept: '', size: 0, truncated: false } }],
    ['a body under the limit, in pieces', { given: { limit: 10, chunks: ['ab', 'cd'] }, want: { kept: 'abcd', size: 4, truncated: false } }],
    ['a body exactly at the limit', { given: { limit: 4, chunks: ['ab', 'cd'] }, want: { kept: 'abcd', size: 4, truncated: false } }],
    [
      'a body over the limit is cut inside a chunk and fully counted',
      { given: { limit: 3, chunks: ['ab', 'cd', 'ef'] }, want: { kept: 'abc', size: 6, truncated: true } },
    ],
    ['a zero limit keeps nothing', { given: { limit: 0, chunks: ['ab'] }, want: { kept: '', size: 2, truncated: true } }],
  ];
  test.each(table)('%s', (_name, { given, want }) => {
    const collector = new BodyCollector(given.limit);
    for (const chunk of given.chunks) collector.push(Buffer.from(chunk));
    const result = collector.finish();
    expect({ kept: result.bytes.toString(), size: result.size, truncated: result.truncated }).toEqual(want);
  });
});
