import { isIPv4, isIPv6 } from 'node:net';

/** What the first bytes of a connection are, read as a PROXY protocol header (haproxy.org proxy-protocol.txt). */
export type ProxyHeaderRead =
  /** Not a PROXY header: the connection speaks HTTP (or TLS) at once. */
  | { kind: 'none' }
  /** A prefix of a header: more bytes are needed. */
  | { kind: 'incomplete' }
  | { kind: 'invalid'; reason: string }
  /**
   * A whole header of `length` bytes. `source` is the client it names; undefined for a LOCAL
   * command (the proxy's own connection, a health check), `UNKNOWN` or a family other than TCP.
   */
  | { kind: 'header'; length: number; source: string | undefined };

const V1_SIGNATURE = Buffer.from('PROXY ', 'latin1');
const V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
/** The spec's bound on a v1 line, CRLF included. */
const V1_MAX_BYTES = 107;

/** Reads a PROXY protocol v1 or v2 header at the start of `head`; never throws. */
export function readProxyHeader(head: Buffer): ProxyHeaderRead {
  if (startsLike(head, V2_SIGNATURE)) return head.length < V2_SIGNATURE.length ? { kind: 'incomplete' } : readV2(head);
  if (startsLike(head, V1_SIGNATURE)) return head.length < V1_SIGNATURE.length ? { kind: 'incomplete' } : readV1(head);
  return { kind: 'none' };
}

/** Whether `head` and `signature` agree on their common length (a short head may still become it). */
function startsLike(head: Buffer, signature: Buffer): boolean {
  const length = Math.min(head.length, signature.length);
  return head.length > 0 && head.subarray(0, length).equals(signature.subarray(0, length));
}

function readV1(head: Buffer): ProxyHeaderRead {
  const end = head.indexOf('\r\n', 0, 'latin1');
  if (end === -1) return head.length >= V1_MAX_BYTES ? { kind: 'invalid', reason: 'v1 header longer than 107 bytes' } : { kind: 'incomplete' };
  if (end + 2 > V1_MAX_BYTES) return { kind: 'invalid', reason: 'v1 header longer than 107 bytes' };
  const fields = head.toString('latin1', V1_SIGNATURE.length, end).split(' ');
  const length = end + 2;
  if (fields[0] === 'UNKNOWN') return { kind: 'header', length, source: undefined };
  if (fields.length !== 5) return { kind: 'invalid', reason: 'v1 header without five fields' };
  const [family, source, destination, sourcePort, destinationPort] = fields as [string, string, string, string, string];
  const isAddress = family === 'TCP4' ? isIPv4 : family === 'TCP6' ? isIPv6 : undefined;
  if (!isAddress) return { kind: 'invalid', reason: `v1 header with protocol "${family}"` };
  if (!isAddress(source) || !isAddress(destination)) return { kind: 'invalid', reason: 'v1 header with an address not of its protocol' };
  if (!isPort(sourcePort) || !isPort(destinationPort)) return { kind: 'invalid', reason: 'v1 header with a malformed port' };
  return { kind: 'header', length, source };
}

function isPort(text: string): boolean {
  return /^(0|[1-9]\d{0,4})$/.test(text) && Number(text) <= 65535;
}

function readV2(head: Buffer): ProxyHeaderRead {
  if (head.length < 16) return { kind: 'incomplete' };
  const versionCommand = head[12]!;
  if (versionCommand >> 4 !== 2) return { kind: 'invalid', reason: 'v2 header with a version other than 2' };
  const command = versionCommand & 0x0f;
  if (command > 1) return { kind: 'invalid', reason: 'v2 header with an unknown command' };
  const familyProtocol = head[13]!;
  const length = 16 + head.readUInt16BE(14);
  if (head.length < length) return { kind: 'incomplete' };
  // LOCAL: the proxy's own connection (health checks); the address block, if any, is ignored.
  if (command === 0) return { kind: 'header', length, source: undefined };
  if (familyProtocol === 0x11) {
    if (length < 16 + 12) return { kind: 'invalid', reason: 'v2 TCP4 header shorter than its addresses' };
    return { kind: 'header', length, source: `${head[16]}.${head[17]}.${head[18]}.${head[19]}` };
  }
  if (familyProtocol === 0x21) {
    if (length < 16 + 36) return { kind: 'invalid', reason: 'v2 TCP6 header shorter than its addresses' };
    return { kind: 'header', length, source: ipv6Text(head.subarray(16, 32)) };
  }
  // UNSPEC, UDP and unix sockets: the spec has the receiver use the connection's own addresses.
  return { kind: 'header', length, source: undefined };
}

/** An IPv6 address as Node prints a peer: compressed, an IPv4-mapped one as plain IPv4. */
function ipv6Text(bytes: Buffer): string {
  if (bytes.readUInt32BE(0) === 0 && bytes.readUInt32BE(4) === 0 && bytes.readUInt16BE(8) === 0 && bytes.readUInt16BE(10) === 0xffff) {
    return `${bytes[12]}.${bytes[13]}.${bytes[14]}.${bytes[15]}`;
  }
  const groups: string[] = [];
  for (let at = 0; at < 16; at += 2) groups.push(bytes.readUInt16BE(at).toString(16));
  // The URL parser writes the shortest form (RFC 5952).
  return new URL(`http://[${groups.join(':')}]/`).hostname.slice(1, -1);
}
