import { Http2ServerRequest, constants as http2Constants } from 'node:http2';
import type { NodeRequest } from './reply.js';
import { AppError } from '../errors.js';

/** The body limit of an API that sets none (docs/architecture.md, request bodies). */
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * How much more of a refused HTTP/1.1 body is read and thrown away, and for how long, before the
 * connection is closed. The client is usually still sending when the 413 is written, and must get
 * to read it: a socket closed with unread input is reset, and a client whose next write fails on
 * that reset loses the answer with it. So the server half-closes first (the answer, then FIN) and
 * keeps reading for this grace, which gives the client time to read the answer.
 */
const DRAIN_GRACE_BYTES = 4 * 1024 * 1024;
const DRAIN_GRACE_MS = 2000;

/**
 * Reads a request body up to `limit` bytes. A larger one is refused with `content_too_large` (413)
 * as soon as it is known, from Content-Length or, for a streamed body, at the byte that crosses
 * the limit: what was read is dropped and the rest is not kept (see `stopReading`).
 */
export function readBody(req: NodeRequest, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const tooLarge = () =>
      reject(
        new AppError('content_too_large', `The request body is larger than the limit of ${limit} bytes.`, {
          violations: [{ field: 'body', message: `must be at most ${limit} bytes` }],
        }),
      );
    const refuse = () => {
      stopReading(req);
      tooLarge();
    };
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > limit) {
      if (declared <= DRAIN_GRACE_BYTES && !(req instanceof Http2ServerRequest)) drainThen(req, tooLarge);
      else refuse();
      return;
    }
    let chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.off('data', onData);
        req.off('end', onEnd);
        chunks = [];
        refuse();
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', reject);
  });
}

/**
 * Answers a refused HTTP/1.1 body of a known length within the grace only once it has arrived (read
 * and dropped). A client that writes its whole body before it reads (Node's http client, dredd) has
 * then finished writing when the answer and the connection's end come: answering first and
 * half-closing raced its last writes, which failed with EPIPE about once in a hundred 3 MiB bodies
 * on loopback and lost the 413 with them. A sender slower than DRAIN_GRACE_MS is answered then and
 * cut as `stopReading` does.
 */
function drainThen(req: NodeRequest, answer: () => void): void {
  let answered = false;
  const once = () => {
    if (answered) return;
    answered = true;
    clearTimeout(timer);
    answer();
  };
  const timer = setTimeout(() => {
    if (!answered) stopReading(req);
    once();
  }, DRAIN_GRACE_MS).unref();
  req.once('end', once);
  req.once('close', once);
  req.resume();
}

/**
 * Stops a refused body without buffering it. The caller answers at once (in the same tick as the
 * rejection), so the answer is written before this acts. HTTP/2: once the answer is out the
 * stream is reset with NO_ERROR, which tells the client to stop sending (RFC 9113 §8.1) and leaves
 * the connection's other streams alone. HTTP/1.1: the connection is half-closed after the answer
 * and the rest of the body discarded while it arrives, up to a grace, then the socket is closed.
 */
function stopReading(req: NodeRequest): void {
  if (req instanceof Http2ServerRequest) {
    const stream = req.stream;
    stream.once('finish', () => {
      if (!stream.closed && !stream.readableEnded) stream.close(http2Constants.NGHTTP2_NO_ERROR);
    });
    return;
  }
  const socket = req.socket;
  const cut = () => {
    clearTimeout(timer);
    socket.destroy();
  };
  const timer = setTimeout(cut, DRAIN_GRACE_MS).unref();
  let discarded = 0;
  req.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > DRAIN_GRACE_BYTES) cut();
  });
  req.once('close', () => clearTimeout(timer));
  req.resume();
  // After the answer (written in this tick by the caller): FIN, so the client reads answer + end.
  setImmediate(() => {
    if (!socket.destroyed) socket.end();
  });
}
