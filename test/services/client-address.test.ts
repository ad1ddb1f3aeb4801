import { clientKey, inRanges, parseForwarded, parseTrustProxy, resolveClientAddress, type ForwardingFacts } from '../../src/services/client-address.js';

const hops = (count: number) => parseTrustProxy(String(count));
const cidrs = (list: string) => parseTrustProxy(list);

type Want = { address: string | undefined; proxies?: string[]; headersTrusted?: boolean; proto?: string };

const cases: Array<[string, { given: ForwardingFacts; trust: string | undefined; want: Want }]> = [
  // --- no trust: the connection's peer, headers ignored ---
  [
    'without TRUST_PROXY, X-Forwarded-For is ignored',
    { given: { peer: '10.0.0.1', xForwardedFor: '1.2.3.4' }, trust: undefined, want: { address: '10.0.0.1', headersTrusted: false } },
  ],
  ['without TRUST_PROXY, Forwarded is ignored', { given: { peer: '10.0.0.1', forwarded: 'for=1.2.3.4' }, trust: undefined, want: { address: '10.0.0.1' } }],
  // --- hop counts ---
  [
    'one hop: the value the proxy appended is the client',
    { given: { peer: '10.0.0.1', xForwardedFor: '1.2.3.4' }, trust: '1', want: { address: '1.2.3.4', proxies: ['10.0.0.1'], headersTrusted: true } },
  ],
  [
    'one hop: values a client prepends are never reached',
    { given: { peer: '10.0.0.1', xForwardedFor: '6.6.6.6, 7.7.7.7, 1.2.3.4' }, trust: '1', want: { address: '1.2.3.4' } },
  ],
  [
    "two hops: the value before the nearest proxy's",
    { given: { peer: '10.0.0.1', xForwardedFor: '6.6.6.6, 1.2.3.4, 10.0.0.2' }, trust: '2', want: { address: '1.2.3.4', proxies: ['10.0.0.2', '10.0.0.1'] } },
  ],
  ['more hops than the chain: the farthest named hop', { given: { peer: '10.0.0.1', xForwardedFor: '1.2.3.4' }, trust: '3', want: { address: '1.2.3.4' } }],
  ['one hop without the header: the peer itself', { given: { peer: '10.0.0.1' }, trust: '1', want: { address: '10.0.0.1', proxies: [] } }],
  [
    'repeated header lines are one list, walked from the right',
    { given: { peer: '10.0.0.1', xForwardedFor: ['6.6.6.6', '1.2.3.4'] }, trust: '1', want: { address: '1.2.3.4' } },
  ],
  [
    'one hop after a PROXY header: the PROXY source, not the header',
    {
      given: { peer: '10.0.0.1', proxied: '1.2.3.4', xForwardedFor: '6.6.6.6' },
      trust: '1',
      want: { address: '1.2.3.4', proxies: ['10.0.0.1'], headersTrusted: false },
    },
  ],
  [
    'two hops after a PROXY header: the HTTP proxy behind it is believed',
    {
      given: { peer: '10.0.0.1', proxied: '10.0.0.9', xForwardedFor: '6.6.6.6, 1.2.3.4' },
      trust: '2',
      want: { address: '1.2.3.4', proxies: ['10.0.0.9', '10.0.0.1'], headersTrusted: true },
    },
  ],
  // --- CIDRs ---
  [
    'a peer outside the blocks: its header is ignored',
    { given: { peer: '192.0.2.7', xForwardedFor: '1.2.3.4' }, trust: '10.0.0.0/8', want: { address: '192.0.2.7', headersTrusted: false } },
  ],
  [
    'a peer inside: trusted hops are skipped from the right',
    {
      given: { peer: '10.0.0.1', xForwardedFor: '6.6.6.6, 1.2.3.4, 10.1.1.1' },
      trust: '10.0.0.0/8',
      want: { address: '1.2.3.4', proxies: ['10.1.1.1', '10.0.0.1'] },
    },
  ],
  [
    'every hop trusted: the farthest named is the client',
    { given: { peer: '10.0.0.1', xForwardedFor: '10.0.0.3, 10.0.0.2' }, trust: '10.0.0.0/8', want: { address: '10.0.0.3', proxies: ['10.0.0.2', '10.0.0.1'] } },
  ],
  [
    'an IPv4-mapped peer matches an IPv4 block',
    { given: { peer: '::ffff:127.0.0.1', xForwardedFor: '1.2.3.4' }, trust: 'loopback', want: { address: '1.2.3.4' } },
  ],
  ['an IPv6 peer matches an IPv6 block', { given: { peer: 'fd00::5', xForwardedFor: '2001:db8::1' }, trust: 'fd00::/8', want: { address: '2001:db8::1' } }],
  [
    'an IPv6 peer does not match an IPv4 block',
    { given: { peer: '2001:db8::9', xForwardedFor: '1.2.3.4' }, trust: '0.0.0.0/0', want: { address: '2001:db8::9' } },
  ],
  ['the private name covers 172.16/12', { given: { peer: '172.20.1.1', xForwardedFor: '1.2.3.4' }, trust: 'private', want: { address: '1.2.3.4' } }],
  [
    'a PROXY header from a trusted balancer names an untrusted client: headers are not believed',
    { given: { peer: '10.0.0.1', proxied: '1.2.3.4', xForwardedFor: '6.6.6.6' }, trust: '10.0.0.0/8', want: { address: '1.2.3.4', headersTrusted: false } },
  ],
  // --- malformed and hidden values ---
  [
    'a garbage value ends the walk at the proxy that wrote it',
    { given: { peer: '10.0.0.1', xForwardedFor: '1.2.3.4, not-an-ip' }, trust: '1', want: { address: '10.0.0.1', proxies: [] } },
  ],
  ['an empty header falls back to the peer', { given: { peer: '10.0.0.1', xForwardedFor: '' }, trust: '1', want: { address: '10.0.0.1' } }],
  ['an address with a port is read without it', { given: { peer: '10.0.0.1', xForwardedFor: '1.2.3.4:5678' }, trust: '1', want: { address: '1.2.3.4' } }],
  [
    'a bracketed IPv6 with a port is read without them',
    { given: { peer: '10.0.0.1', xForwardedFor: '[2001:DB8::1]:443' }, trust: '1', want: { address: '2001:db8::1' } },
  ],
  [
    'a garbage value past the client is never read',
    { given: { peer: '10.0.0.1', xForwardedFor: 'garbage, 1.2.3.4' }, trust: '1', want: { address: '1.2.3.4' } },
  ],
  // --- Forwarded ---
  [
    'Forwarded for= is walked from the right',
    { given: { peer: '10.0.0.1', forwarded: 'for=6.6.6.6, for=1.2.3.4;proto=https' }, trust: '1', want: { address: '1.2.3.4', proto: 'https' } },
  ],
  [
    'Forwarded quoted IPv6 with port',
    { given: { peer: '10.0.0.1', forwarded: 'for="[2001:db8:cafe::17]:4711"' }, trust: '1', want: { address: '2001:db8:cafe::17' } },
  ],
  ['Forwarded for=unknown ends the walk at the proxy', { given: { peer: '10.0.0.1', forwarded: 'for=unknown' }, trust: '1', want: { address: '10.0.0.1' } }],
  [
    'Forwarded obfuscated identifier ends the walk at the proxy',
    { given: { peer: '10.0.0.1', forwarded: 'for=_hidden, for=10.0.0.2' }, trust: '10.0.0.0/8', want: { address: '10.0.0.2', proxies: ['10.0.0.1'] } },
  ],
  ['Forwarded element without for= ends the walk', { given: { peer: '10.0.0.1', forwarded: 'proto=https' }, trust: '1', want: { address: '10.0.0.1' } }],
  [
    'Forwarded commas inside quotes do not split elements',
    { given: { peer: '10.0.0.1', forwarded: 'for=1.2.3.4;host="a,b", for=5.6.7.8' }, trust: '2', want: { address: '1.2.3.4' } },
  ],
  [
    'Forwarded from an untrusted peer is ignored',
    { given: { peer: '192.0.2.7', forwarded: 'for=1.2.3.4' }, trust: '10.0.0.0/8', want: { address: '192.0.2.7' } },
  ],
  // --- both headers ---
  [
    'a chain of trusted hops longer than 64 ends after 64 of them',
    {
      given: { peer: '10.0.0.1', xForwardedFor: Array.from({ length: 100 }, (_, n) => `10.1.0.${n}`).join(',') },
      trust: 'private',
      want: { address: '10.1.0.36' },
    },
  ],
  [
    'both headers agreeing: that client',
    { given: { peer: '10.0.0.1', xForwardedFor: '1.2.3.4', forwarded: 'for=1.2.3.4' }, trust: '1', want: { address: '1.2.3.4' } },
  ],
  [
    'both headers disagreeing: neither is believed',
    { given: { peer: '10.0.0.1', xForwardedFor: '6.6.6.6', forwarded: 'for=1.2.3.4' }, trust: '1', want: { address: '10.0.0.1', proxies: [] } },
  ],
];

describe('resolveClientAddress', () => {
  it.each(cases)('%s', (_name, { given, trust, want }) => {
    const resolved = resolveClientAddress(given, trust === undefined ? undefined : /^\d+$/.test(trust) ? hops(Number(trust)) : cidrs(trust));
    expect(resolved.address).toBe(want.address);
    if (want.proxies) expect(resolved.proxies).toEqual(want.proxies);
    if (want.headersTrusted !== undefined) expect(resolved.headersTrusted).toBe(want.headersTrusted);
    if (want.proto) expect(resolved.element?.proto).toBe(want.proto);
  });

  it('a client rotating 1,000 leftmost values through one trusted proxy keeps one address', () => {
    const trust = hops(1);
    const seen = new Set<string | undefined>();
    for (let n = 0; n < 1000; n++) {
      seen.add(resolveClientAddress({ peer: '10.0.0.1', xForwardedFor: `203.0.${n >> 8}.${n & 255}, 198.51.100.7` }, trust).address);
    }
    expect([...seen]).toEqual(['198.51.100.7']);
  });
});

describe('parseTrustProxy', () => {
  it.each([
    ['a hop count', '2', { hops: 2 }],
    ['an empty value is no trust', ' ', undefined],
  ])('reads %s', (_name, raw, want) => expect(parseTrustProxy(raw)).toEqual(want));

  it.each([
    ['zero hops', '0', /between 1 and 64/],
    ['more hops than a walk passes', '65', /between 1 and 64/],
    ['a word it does not know', 'everyone', /neither a hop count/],
    ['a prefix too long for IPv4', '10.0.0.0/33', /prefix length/],
    ['a prefix too long for IPv6', '::/129', /prefix length/],
    ['a list of nothing', ',', /names no proxy/],
  ])('refuses %s', (_name, raw, message) => expect(() => parseTrustProxy(raw)).toThrow(message));

  it.each([
    ['10.1.2.3', '10.0.0.0/8', true],
    ['11.0.0.1', '10.0.0.0/8', false],
    ['::ffff:10.1.2.3', '10.0.0.0/8', true],
    ['192.0.2.1', '192.0.2.1', true],
    ['192.0.2.2', '192.0.2.1', false],
    ['fe80::1%eth0', 'linklocal', true],
    ['2001:db8::1', '2001:db8::/32', true],
    ['2001:db9::1', '2001:db8::/32', false],
    ['::1', 'loopback', true],
    ['not an address', '0.0.0.0/0', false],
  ])('%s in %s: %s', (address, list, want) => expect(inRanges(address, parseTrustProxy(list)!.ranges!)).toBe(want));
});

describe('parseForwarded', () => {
  it('reads for, proto and host of each element, unquoting and unescaping', () => {
    expect(parseForwarded('For="[2001:db8::1]:80";Proto=https;host="a\\"b", for=192.0.2.1;by=x')).toEqual([
      { for: '[2001:db8::1]:80', proto: 'https', host: 'a"b' },
      { for: '192.0.2.1' },
    ]);
  });
});

describe('clientKey', () => {
  it.each([
    ['::ffff:127.0.0.1', '127.0.0.1'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    [undefined, 'unknown'],
  ])('%s counts as %s', (address, want) => expect(clientKey(address)).toBe(want));
});
