import { initdbLine, servingLine, tellPerson } from '../src/startup-lines.js';

/** The lines a person reads at start (issue 29 item 3): which URL, which interfaces, which store. */
interface Settings {
  host: string;
  tlsCert: string | undefined;
  databaseUrl: string | undefined;
  dataDir: string;
}
const settings: Settings = { host: '0.0.0.0', tlsCert: undefined, databaseUrl: undefined, dataDir: './data' };

test.each<[string, { given: Partial<Settings>; port: number; kind: 'pglite' | 'postgres'; want: string }]>([
  [
    'every interface over plain HTTP, PGlite on disk',
    {
      given: {},
      port: 8080,
      kind: 'pglite',
      want: 'serving http://localhost:8080 (every interface, HOST 0.0.0.0): REST, GraphQL and gRPC on this one port; store: PGlite in ./data',
    },
  ],
  [
    'one address over TLS, PGlite in memory',
    {
      given: { host: '127.0.0.1', tlsCert: 'cert.pem', dataDir: 'memory://' },
      port: 8443,
      kind: 'pglite',
      want: 'serving https://127.0.0.1:8443: REST, GraphQL and gRPC on this one port; store: PGlite in memory (nothing kept)',
    },
  ],
  [
    'an IPv6 address, PostgreSQL without its credentials',
    {
      given: { host: '::1', databaseUrl: 'postgres://app:secret@db.internal:5432/cfs?sslmode=require' },
      port: 5000,
      kind: 'postgres',
      want: 'serving http://[::1]:5000: REST, GraphQL and gRPC on this one port; store: PostgreSQL at db.internal:5432/cfs',
    },
  ],
])('%s', (_name, { given, port, kind, want }) => {
  const line = servingLine({ ...settings, ...given }, port, kind);
  expect(line).toBe(want);
  expect(line).not.toContain('secret');
});

test('the initdb line says where, why and that later starts are fast', () => {
  expect(initdbLine({ dataDir: '/srv/cfs' })).toMatch(
    /^creating the embedded database in \/srv\/cfs with initdb \(this build has no matching template\): .*later starts/,
  );
});

test('the lines reach a terminal only: a pipe or a file (log collectors) gets the JSON log alone', () => {
  const written: string[] = [];
  tellPerson('to a terminal', { isTTY: true, write: (text: string) => written.push(text) });
  tellPerson('to a pipe', { isTTY: false, write: (text: string) => written.push(text) });
  tellPerson('to a file', { write: (text: string) => written.push(text) });
  expect(written).toEqual(['to a terminal\n']);
});
