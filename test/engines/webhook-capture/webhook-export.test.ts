import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { isReplayedHeader, replayUrl, toCurlCommand, toHarEntry, type CapturedRecord } from '../../../src/engines/webhook-capture/index.js';

const ROUTE = '0b6f4a57-3f55-4d1e-9e8a-3c2f5b1d7a90';

function capture(overrides: Partial<CapturedRecord> = {}): CapturedRecord {
  return {
    id: '3d0c5d0e-8f43-4b7e-a4cc-1f0e2d6b9a11',
    routeId: ROUTE,
    receivedAt: new Date('2026-11-22T17:01:02.345Z'),
    method: 'POST',
    path: `/${ROUTE}/github`,
    query: 'a=1&a=2',
    headers: [
      ['Host', 'hooks.example'],
      ['Content-Type', 'application/json'],
      ['Connection', 'keep-alive'],
      ['Content-Length', '2'],
    ],
    contentType: 'application/json',
    size: 2,
    truncated: false,
    body: Buffer.from('{}'),
    remoteAddress: '127.0.0.1',
    httpVersion: '1.1',
    ...overrides,
  };
}

describe('replayUrl', () => {
  test.each<[string, { given: { target: string; path: string; query: string }; want: string }]>([
    [
      'the sub-path goes after the target path',
      { given: { target: 'http://localhost:3000/hook', path: `/${ROUTE}/github/push`, query: '' }, want: 'http://localhost:3000/hook/github/push' },
    ],
    [
      'a trailing slash on the target is not doubled',
      { given: { target: 'http://localhost:3000/hook/', path: `/${ROUTE}/x`, query: '' }, want: 'http://localhost:3000/hook/x' },
    ],
    [
      'the route root keeps the target path as is',
      { given: { target: 'http://localhost:3000/hook', path: `/${ROUTE}`, query: 'a=1' }, want: 'http://localhost:3000/hook?a=1' },
    ],
    [
      "the capture's query follows the target's own",
      { given: { target: 'https://h/x?token=t', path: `/${ROUTE}`, query: 'a=1&a=2' }, want: 'https://h/x?token=t&a=1&a=2' },
    ],
  ])('%s', (_name, { given, want }) => {
    expect(replayUrl(given.target, { routeId: ROUTE, path: given.path, query: given.query })).toBe(want);
  });
});

describe('isReplayedHeader', () => {
  test.each([
    ['X-Tag', true],
    ['Content-Type', true],
    ['host', false],
    ['Content-Length', false],
    ['Transfer-Encoding', false],
    ['Connection', false],
    [':authority', false],
  ])('%s → %s', (name, want) => expect(isReplayedHeader(name as string)).toBe(want));
});

describe('toCurlCommand', () => {
  const run = promisify(execFile);
  test.each<[string, Buffer]>([
    ['quotes, percent signs and backslashes', Buffer.from(`it's 100% \\n "done"`)],
    ['every byte value', Buffer.from(Array.from({ length: 256 }, (_, index) => index))],
    ['a trailing newline', Buffer.from('line\n')],
  ])('the printf in the command writes the exact bytes: %s', async (_name, body) => {
    const command = toCurlCommand(capture({ body, size: body.length }), 'http://localhost:3000/hook');
    const printf = command.trim().split(' | curl ')[0]!;
    const { stdout } = await run('sh', ['-c', printf], { encoding: 'buffer' });
    expect(Buffer.compare(stdout, body)).toBe(0);
  });

  test("leaves out Host, Content-Length and hop-by-hop lines and removes curl's own defaults the capture lacked", () => {
    const command = toCurlCommand(capture(), 'http://localhost:3000/hook');
    expect(command).toContain(
      `-X 'POST' 'http://localhost:3000/hook' -H 'Content-Type: application/json' -H 'User-Agent:' -H 'Accept:' -H 'Expect:' --data-binary @-`,
    );
    expect(command).not.toMatch(/Host|Content-Length|Connection/);
  });

  test('a request without a body sends none', () => {
    expect(toCurlCommand(capture({ method: 'GET', headers: [], body: Buffer.alloc(0), size: 0 }), 'http://h/')).toBe(
      `curl --silent --show-error --globoff --path-as-is -X 'GET' 'http://h/' -H 'User-Agent:' -H 'Accept:'\n`,
    );
  });
});

describe('toHarEntry', () => {
  test('a text body is postData text; a binary one is base64 with encoding', () => {
    expect(toHarEntry(capture(), 'http://h').request.postData).toEqual({ mimeType: 'application/json', text: '{}' });
    expect(toHarEntry(capture({ body: Buffer.from([255, 0]) }), 'http://h').request.postData).toEqual({
      mimeType: 'application/json',
      text: '/wA=',
      encoding: 'base64',
    });
  });

  test('a body left out of a list becomes a comment with its raw link', () => {
    const entry = toHarEntry(capture({ size: 5_000_000 }), 'http://h', true);
    expect(entry.request.postData).toBeUndefined();
    expect(entry.request.comment).toBe(
      `body of 5000000 bytes left out of this export: http://h/inspect/${ROUTE}/requests/3d0c5d0e-8f43-4b7e-a4cc-1f0e2d6b9a11/raw`,
    );
  });
});
