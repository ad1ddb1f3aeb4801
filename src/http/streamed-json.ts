import type { ServerResponse } from 'node:http';
import type { NodeResponse } from './reply.js';

/**
 * A JSON reply body produced as the client reads it: `chunks` spell the JSON text of a `Document`
 * (the type the contract gives the response; it exists only for the compiler). The writer asks for
 * the next chunk only once the previous one was taken by the client ('drain'), so a client that
 * never reads costs one chunk of work and memory, not a page (docs/hardening.md). `done` is called
 * once, however the reply ends: written, refused (HEAD), failed or dropped by the client.
 */
export class StreamedJson<Document = unknown> {
  declare readonly document?: Document;

  constructor(
    readonly chunks: AsyncIterable<string>,
    readonly done: () => void = () => undefined,
  ) {}

  /** The reply body of a document a service produces chunk by chunk (`chunks`, `done`). */
  static of<Document>(source: { chunks: AsyncIterable<string>; done(): void; readonly document?: Document }): StreamedJson<Document> {
    return new StreamedJson<Document>(source.chunks, () => source.done());
  }
}

/**
 * Writes a streamed body after its head (status and headers already written): a chunk, then waits
 * for 'drain' before the next one is produced. Rejects with the producer's error after destroying
 * the response (the client sees an incomplete answer, never a truncated one that looks whole).
 */
export async function writeStreamedJson(res: NodeResponse, body: StreamedJson, head: boolean): Promise<void> {
  let closed = false;
  const onClose = () => (closed = true);
  res.once('close', onClose);
  let iterator: AsyncIterator<string> | undefined;
  try {
    if (head) return;
    iterator = body.chunks[Symbol.asyncIterator]();
    for (;;) {
      const next = await iterator.next();
      if (next.done === true || closed) break;
      // One cast for both response types (their write overloads differ only in callback typing).
      if (!(res as ServerResponse).write(next.value)) await drained(res);
      if (closed) break;
    }
  } catch (error) {
    closed = true;
    res.destroy(error instanceof Error ? error : new Error(String(error)));
    throw error;
  } finally {
    res.off('close', onClose);
    // A client that went away (or a HEAD) ends the producer early: its `finally` blocks run.
    if (iterator && closed) await iterator.return?.();
    body.done();
    if (!closed) res.end();
  }
}

/** Resolves once the response takes writes again, or is closed. */
function drained(res: NodeResponse): Promise<void> {
  return new Promise((resolve) => {
    const settle = () => {
      res.off('drain', settle);
      res.off('close', settle);
      resolve();
    };
    res.once('drain', settle);
    res.once('close', settle);
  });
}
