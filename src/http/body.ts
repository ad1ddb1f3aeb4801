import type { NodeRequest } from './rest-api.js';
import { AppError } from '../errors.js';

/** Reads a request body up to `limit` bytes; more is a 400 rather than an unbounded buffer. */
export function readBody(req: NodeRequest, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > limit) {
      req.resume();
      reject(new AppError('invalid_argument', 'Bad Request', { violations: [{ field: 'body', message: `must be at most ${limit} bytes` }] }));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(new AppError('invalid_argument', 'Bad Request', { violations: [{ field: 'body', message: `must be at most ${limit} bytes` }] }));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
