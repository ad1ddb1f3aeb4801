import { AsyncLocalStorage } from 'node:async_hooks';
import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * Secrets never reach a log line: anything that can carry a password or token is redacted by path,
 * so a careless `log.info({ body })` stays safe.
 */
const REDACT = [
  'password',
  'oldPassword',
  'accessToken',
  'access_token',
  'subject_token',
  'subjectToken',
  'private_key',
  'privateKey',
  'token',
  'authorization',
  '*.password',
  '*.oldPassword',
  '*.accessToken',
  '*.access_token',
  '*.subject_token',
  '*.subjectToken',
  '*.private_key',
  '*.privateKey',
  '*.token',
  '*.authorization',
  'req.headers.authorization',
  'req.headers["x-access-token"]',
  'req.headers.cookie',
];

/**
 * Fields of the request being served (trace_id, span_id), set by the server around each request.
 * Every line logged while serving it carries them, whatever logger call made it (services log
 * through the one process logger, not a child handed down the call chain).
 */
export const requestLogFields = new AsyncLocalStorage<Readonly<Record<string, string>>>();

/** Creates the process logger: JSON lines on stdout (or `destination`), secrets redacted, the request's trace ids mixed in. */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const options = { level, redact: { paths: REDACT, censor: '[redacted]' }, base: undefined, mixin: () => requestLogFields.getStore() ?? {} };
  return destination ? pino(options, destination) : pino(options);
}
