import { isUtf8 } from 'node:buffer';
import busboy from 'busboy';
import type { components } from '../../../generated/openapi/webhooks.js';

type MultipartPart = components['schemas']['MultipartPart'];

/** Parts listed at most; a part's text is shown up to this many bytes. */
const MULTIPART_MAX_PARTS = 100;
const MULTIPART_MAX_TEXT = 64 * 1024;

/** `multipart/form-data` with a boundary, whatever the case and parameters. */
function isMultipartFormData(contentType: string | null): boolean {
  return contentType !== null && /^\s*multipart\/form-data\s*;/i.test(contentType);
}

/**
 * The parts of a complete `multipart/form-data` body, in order, parsed by busboy: name, file name,
 * type, size and text (valid UTF-8 up to MULTIPART_MAX_TEXT bytes). Bounded: at most
 * MULTIPART_MAX_PARTS parts, each part's bytes counted but only MULTIPART_MAX_TEXT of them kept.
 * Null when the body is not multipart or cannot be parsed (a broken body is still shown raw).
 */
export function parseMultipart(body: Buffer, contentType: string | null): Promise<MultipartPart[] | null> {
  if (!isMultipartFormData(contentType)) return Promise.resolve(null);
  return new Promise((resolve) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: { 'content-type': contentType! },
        // fieldSize: the whole (already bounded) body, so a field's size is exact; only its text is cut.
        limits: { parts: MULTIPART_MAX_PARTS, fieldSize: body.length, fieldNameSize: 1024, headerPairs: 100 },
        preservePath: true,
      });
    } catch {
      resolve(null);
      return;
    }
    const parts: Array<MultipartPart | undefined> = [];
    let settled = false;
    const finish = (result: MultipartPart[] | null) => {
      if (settled) return;
      settled = true;
      resolve(result);
    };
    parser.on('field', (name, value, info) => {
      const bytes = Buffer.byteLength(value);
      parts.push({
        name,
        filename: null,
        contentType: info.mimeType,
        size: bytes,
        text: bytes > MULTIPART_MAX_TEXT ? null : value,
      });
    });
    parser.on('file', (name, stream, info) => {
      const index = parts.push(undefined) - 1;
      const kept: Buffer[] = [];
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        if (size < MULTIPART_MAX_TEXT + 1) kept.push(chunk);
        size += chunk.length;
      });
      stream.on('end', () => {
        const head = Buffer.concat(kept);
        parts[index] = {
          name,
          filename: info.filename ?? null,
          contentType: info.mimeType,
          size,
          text: size <= MULTIPART_MAX_TEXT && isUtf8(head) ? head.toString('utf8') : null,
        };
      });
    });
    parser.on('error', () => finish(null));
    parser.on('close', () => finish(parts.filter((part): part is MultipartPart => part !== undefined)));
    parser.end(body);
  });
}
