import type { UniversalHandler, UniversalServerResponse } from '@connectrpc/connect/protocol';
import { editTrailer, wrapUniversalHandler } from './universal-handler.js';

const utf8 = new TextEncoder();
const HEX = '0123456789ABCDEF';

/**
 * `grpc-message` as the gRPC spec (PROTOCOL-HTTP2.md, "Status-Message") writes it: the UTF-8 bytes
 * of the message, each byte outside 0x20–0x7E and `%` itself percent-encoded, nothing else.
 * connect-es uses encodeURIComponent, which also encodes `:`, `,`, `#`, spaces…; @grpc/grpc-js
 * decodes with decodeURI and so showed such messages as `Authorization%3A Bearer`.
 */
export function encodeGrpcMessage(message: string): string {
  let plain = true;
  for (let index = 0; index < message.length; index++) {
    const code = message.charCodeAt(index);
    if (code < 0x20 || code > 0x7e || code === 0x25) {
      plain = false;
      break;
    }
  }
  if (plain) return message;
  let out = '';
  for (const byte of utf8.encode(message)) {
    out += byte < 0x20 || byte > 0x7e || byte === 0x25 ? `%${HEX[byte >> 4]}${HEX[byte & 15]}` : String.fromCharCode(byte);
  }
  return out;
}

/** A `grpc-message` written by connect (encodeURIComponent) in the spec's encoding; left alone when it does not decode. */
function respelled(value: string): string {
  try {
    return encodeGrpcMessage(decodeURIComponent(value));
  } catch {
    return value;
  }
}

function respellTrailer(trailer: Headers): void {
  const value = trailer.get('grpc-message');
  if (value !== null) trailer.set('grpc-message', respelled(value));
}

const GRPC_WEB_TRAILER_FLAG = 0x80;
const GRPC_MESSAGE_LINE = /^grpc-message:[ \t]*(.*)$/i;

/**
 * gRPC-Web carries its trailers in the last envelope of the body (flag 0x80, `name: value\r\n`
 * lines); connect serializes it inside its pipeline, so the line is rewritten in the bytes. A
 * compressed trailer envelope (flag 0x81, only above the compression threshold) passes as it is.
 */
async function* respellGrpcWebTrailer(body: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  for await (const chunk of body) {
    if (
      chunk.length < 5 ||
      chunk[0] !== GRPC_WEB_TRAILER_FLAG ||
      Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length).readUInt32BE(1) !== chunk.length - 5
    ) {
      yield chunk;
      continue;
    }
    const lines = Buffer.from(chunk.subarray(5)).toString('latin1').split('\r\n');
    const rewritten = Buffer.from(
      lines.map((line) => line.replace(GRPC_MESSAGE_LINE, (_all, value: string) => `grpc-message: ${respelled(value)}`)).join('\r\n'),
      'latin1',
    );
    const envelope = Buffer.allocUnsafe(5 + rewritten.length);
    envelope[0] = GRPC_WEB_TRAILER_FLAG;
    envelope.writeUInt32BE(rewritten.length, 1);
    rewritten.copy(envelope, 5);
    yield envelope;
  }
}

/**
 * Wraps one of connect's handlers so every `grpc-message` it writes (gRPC trailers, gRPC-Web
 * trailer envelope) is encoded as the spec asks ({@link encodeGrpcMessage}). Connect-protocol
 * errors are JSON bodies and pass unchanged.
 */
export function specGrpcMessages(handler: UniversalHandler): UniversalHandler {
  const wrapped = async (req: Parameters<UniversalHandler>[0]): Promise<UniversalServerResponse> => {
    const res = await handler(req);
    if (res.trailer) return editTrailer(res, respellTrailer);
    if (res.body && /^application\/grpc-web(?![-+]text)/.test(res.header?.get('content-type') ?? '')) {
      return { ...res, body: respellGrpcWebTrailer(res.body) };
    }
    return res;
  };
  return wrapUniversalHandler(handler, wrapped);
}
