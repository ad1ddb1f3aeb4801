import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * Secrets never reach a log line: anything that can carry a password or token is redacted by path,
 * so a careless `log.info({ body })` stays safe.
 */
const REDACT = [
  'password', 'oldPassword', 'accessToken', 'access_token', 'subject_token', 'subjectToken', 'private_key',
  'privateKey', 'token', 'authorization',
  '*.password', '*.oldPassword', '*.accessToken', '*.access_token', '*.subject_token', '*.subjectToken',
  '*.private_key', '*.privateKey', '*.token', '*.authorization',
  'req.headers.authorization', 'req.headers["x-access-token"]', 'req.headers.cookie',
];

/** Creates the process logger: JSON lines on stdout, secrets redacted. */
export function createLogger(level: string): Logger {
  return pino({ level, redact: { paths: REDACT, censor: '[redacted]' }, base: undefined });
}
