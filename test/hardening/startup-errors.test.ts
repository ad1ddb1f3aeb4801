import { describeStartupError, StartupTimeoutError, type StartupStep } from '../../src/startup-errors.js';
import { DataDirError } from '../../src/store/data-dir-lock.js';

const pg = { port: 8080, host: '0.0.0.0', databaseUrl: 'postgres://app:secret@db.internal:5432/app', dataDir: './data' };
const pglite = { ...pg, databaseUrl: undefined };
const systemError = (code: string, message = code) => Object.assign(new Error(message), { code });

/** The causes the child-process tests cannot produce on this machine, each with its one line. */
const CASES: Array<[string, { given: { error: unknown; step: StartupStep; settings: typeof pg | typeof pglite }; want: string }]> = [
  [
    'a privileged port',
    {
      given: { error: systemError('EACCES'), step: 'listen', settings: pg },
      want: 'PORT 8080 on HOST 0.0.0.0 cannot be bound: permission denied (ports below 1024 need privileges)',
    },
  ],
  [
    'a HOST that is not ours',
    { given: { error: systemError('EADDRNOTAVAIL'), step: 'listen', settings: pg }, want: 'HOST 0.0.0.0 is not an address of this machine (EADDRNOTAVAIL)' },
  ],
  [
    'an unknown database host',
    {
      given: { error: systemError('ENOTFOUND'), step: 'database', settings: pg },
      want: 'DATABASE_URL postgres://app:***@db.internal:5432/app: the host name does not resolve (ENOTFOUND)',
    },
  ],
  [
    'a wrong password',
    {
      given: { error: systemError('28P01', 'password authentication failed for user "app"'), step: 'database', settings: pg },
      want: 'DATABASE_URL postgres://app:***@db.internal:5432/app: authentication failed (password authentication failed for user "app")',
    },
  ],
  [
    'pg giving up connecting',
    {
      given: { error: new Error('timeout expired'), step: 'database', settings: pg },
      want: 'DATABASE_URL postgres://app:***@db.internal:5432/app: the database did not answer (connection timed out)',
    },
  ],
  [
    'refused on IPv4 and IPv6 (AggregateError)',
    {
      given: { error: new AggregateError([systemError('ECONNREFUSED'), systemError('ECONNREFUSED')]), step: 'database', settings: pg },
      want: 'DATABASE_URL postgres://app:***@db.internal:5432/app: connection refused (is PostgreSQL running and listening there?)',
    },
  ],
  [
    'a PGlite directory that is not a database',
    {
      given: {
        error: new DataDirError('DATA_DIR ./data cannot be opened as a PGlite database: PGlite failed to initialize properly'),
        step: 'database',
        settings: pglite,
      },
      want: 'DATA_DIR ./data cannot be opened as a PGlite database: PGlite failed to initialize properly',
    },
  ],
  [
    'PGlite not opening in time',
    {
      given: { error: new StartupTimeoutError(2000), step: 'database', settings: pglite },
      want: 'DATA_DIR ./data: the embedded database did not open within 2 s (STARTUP_TIMEOUT_MS)',
    },
  ],
  [
    'migrations not finishing in time',
    { given: { error: new StartupTimeoutError(2000), step: 'build', settings: pg }, want: 'the start did not finish within 2 s (STARTUP_TIMEOUT_MS)' },
  ],
];

test.each(CASES)('%s', (_name, { given, want }) => {
  expect(describeStartupError(given.error, given.step, given.settings)).toBe(want);
});
