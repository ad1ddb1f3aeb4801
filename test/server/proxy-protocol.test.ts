import { readProxyHeader, type ProxyHeaderRead } from '../../src/server/proxy-protocol.js';

const SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);

/** A v2 header: version/command byte, family byte, then the address block and TLVs. */
function v2(versionCommand: number, family: number, body: Buffer): Buffer {
  const length = Buffer.alloc(2);
  length.writeUInt16BE(body.length);
  return Buffer.concat([SIGNATURE, Buffer.from([versionCommand, family]), length, body]);
}
const tcp4 = Buffer.from([192, 0, 2, 1, 10, 0, 0, 1, 0x30, 0x39, 0x00, 0x50]);
const tcp6 = Buffer.concat([Buffer.from('20010db8000000000000000000000001', 'hex'), Buffer.alloc(16), Buffer.from([0x30, 0x39, 0x01, 0xbb])]);
const mapped = Buffer.concat([Buffer.from('00000000000000000000ffffc0000205', 'hex'), Buffer.alloc(16), Buffer.alloc(4)]);
const tlv = Buffer.from([0x04, 0x00, 0x03, 0x61, 0x62, 0x63]);

const cases: Array<[string, { given: Buffer; want: ProxyHeaderRead }]> = [
  ['HTTP/1.1 is no header', { given: Buffer.from('GET / HTTP/1.1\r\n'), want: { kind: 'none' } }],
  ['the HTTP/2 preface is no header', { given: Buffer.from('PRI * HTTP/2.0\r\n'), want: { kind: 'none' } }],
  ['a TLS ClientHello is no header', { given: Buffer.from([0x16, 0x03, 0x01]), want: { kind: 'none' } }],
  ['"PRO" may still become one', { given: Buffer.from('PRO'), want: { kind: 'incomplete' } }],
  ['v1 TCP4', { given: Buffer.from('PROXY TCP4 192.0.2.1 10.0.0.1 12345 80\r\nGET'), want: { kind: 'header', length: 40, source: '192.0.2.1' } }],
  ['v1 TCP6', { given: Buffer.from('PROXY TCP6 2001:db8::1 ::1 12345 443\r\n'), want: { kind: 'header', length: 38, source: '2001:db8::1' } }],
  ['v1 UNKNOWN names no client', { given: Buffer.from('PROXY UNKNOWN\r\n'), want: { kind: 'header', length: 15, source: undefined } }],
  ['v1 without its CRLF yet', { given: Buffer.from('PROXY TCP4 192.0.2.1'), want: { kind: 'incomplete' } }],
  ['v1 longer than 107 bytes', { given: Buffer.from(`PROXY TCP4 ${'1'.repeat(120)}`), want: { kind: 'invalid', reason: 'v1 header longer than 107 bytes' } }],
  [
    'v1 with an IPv6 address under TCP4',
    { given: Buffer.from('PROXY TCP4 ::1 10.0.0.1 1 2\r\n'), want: { kind: 'invalid', reason: 'v1 header with an address not of its protocol' } },
  ],
  [
    'v1 with a port beyond 65535',
    { given: Buffer.from('PROXY TCP4 192.0.2.1 10.0.0.1 65536 80\r\n'), want: { kind: 'invalid', reason: 'v1 header with a malformed port' } },
  ],
  ['v1 with four fields', { given: Buffer.from('PROXY TCP4 192.0.2.1 10.0.0.1 1\r\n'), want: { kind: 'invalid', reason: 'v1 header without five fields' } }],
  [
    'v1 with an unknown protocol',
    { given: Buffer.from('PROXY UDP4 192.0.2.1 10.0.0.1 1 2\r\n'), want: { kind: 'invalid', reason: 'v1 header with protocol "UDP4"' } },
  ],
  ['v2 TCP4', { given: v2(0x21, 0x11, tcp4), want: { kind: 'header', length: 28, source: '192.0.2.1' } }],
  ['v2 TCP4 with TLVs skipped', { given: v2(0x21, 0x11, Buffer.concat([tcp4, tlv])), want: { kind: 'header', length: 34, source: '192.0.2.1' } }],
  ['v2 TCP6', { given: v2(0x21, 0x21, tcp6), want: { kind: 'header', length: 52, source: '2001:db8::1' } }],
  ['v2 TCP6 IPv4-mapped reads as IPv4', { given: v2(0x21, 0x21, mapped), want: { kind: 'header', length: 52, source: '192.0.2.5' } }],
  ['v2 LOCAL names no client', { given: v2(0x20, 0x00, Buffer.alloc(0)), want: { kind: 'header', length: 16, source: undefined } }],
  ['v2 UNSPEC names no client', { given: v2(0x21, 0x00, Buffer.alloc(0)), want: { kind: 'header', length: 16, source: undefined } }],
  ['v2 cut inside its signature', { given: SIGNATURE.subarray(0, 7), want: { kind: 'incomplete' } }],
  ['v2 cut inside its addresses', { given: v2(0x21, 0x11, tcp4).subarray(0, 20), want: { kind: 'incomplete' } }],
  ['v2 of version 1', { given: v2(0x11, 0x11, tcp4), want: { kind: 'invalid', reason: 'v2 header with a version other than 2' } }],
  ['v2 with an unknown command', { given: v2(0x22, 0x11, tcp4), want: { kind: 'invalid', reason: 'v2 header with an unknown command' } }],
  [
    'v2 TCP4 shorter than its addresses',
    { given: v2(0x21, 0x11, Buffer.alloc(4)), want: { kind: 'invalid', reason: 'v2 TCP4 header shorter than its addresses' } },
  ],
  ['v2 TCP6 shorter than its addresses', { given: v2(0x21, 0x21, tcp4), want: { kind: 'invalid', reason: 'v2 TCP6 header shorter than its addresses' } }],
];

describe('readProxyHeader', () => {
  it.each(cases)('%s', (_name, { given, want }) => expect(readProxyHeader(given)).toEqual(want));
});
