import { isIP, isIPv6 } from 'node:net';

/**
 * The key under which per-client limits count an address: IPv4 as is (also when IPv4-mapped), IPv6
 * by its /64 prefix — the block one subscriber usually gets, so rotating through the addresses of
 * one block does not multiply an allowance.
 */
export function clientKey(address: string | undefined): string {
  if (!address) return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  return `${expandIPv6(address).slice(0, 4).join(':')}::/64`;
}

function expandIPv6(address: string): string[] {
  const [head = '', tail] = address.split('%', 1)[0]!.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const missing = Math.max(0, 8 - left.length - right.length);
  return [...left, ...Array.from({ length: missing }, () => '0'), ...right].map((group) => group.toLowerCase().replace(/^0+(?=.)/, ''));
}

/**
 * Which proxies' word about the client is believed (`TRUST_PROXY`): the `hops` nearest this server
 * whatever their address, or those whose address is in `ranges`.
 */
export type TrustProxy = { hops: number; ranges?: undefined } | { hops?: undefined; ranges: readonly AddressRange[] };

/** A CIDR block, as eight 16-bit groups (IPv4 as its IPv4-mapped IPv6 block) and a prefix length. */
export interface AddressRange {
  groups: readonly number[];
  prefix: number;
}

/** The most trusted hops a walk passes; a longer chain of trusted addresses ends at the last one passed. */
const MAX_HOPS = 64;

/** Named blocks `TRUST_PROXY` accepts in its list, for the usual places a proxy runs. */
const NAMED_RANGES: Record<string, readonly string[]> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  private: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', 'fc00::/7'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
};

/**
 * Reads a `TRUST_PROXY` value: a hop count (`1`, `2`, …) or a comma list of CIDRs, single addresses
 * and the names `loopback`, `private`, `linklocal`. Throws an Error saying what is wrong; an empty
 * value is no trust at all (undefined).
 */
export function parseTrustProxy(raw: string): TrustProxy | undefined {
  const value = raw.trim();
  if (value === '') return undefined;
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (hops < 1 || hops > MAX_HOPS) throw new Error(`a hop count must be between 1 and ${MAX_HOPS}, got ${value}`);
    return { hops };
  }
  const ranges: AddressRange[] = [];
  for (const item of value.split(',')) {
    const entry = item.trim().toLowerCase();
    if (entry === '') continue;
    const named = NAMED_RANGES[entry];
    for (const cidr of named ?? [entry]) ranges.push(parseRange(cidr));
  }
  if (ranges.length === 0) throw new Error('the list names no proxy');
  return { ranges };
}

function parseRange(cidr: string): AddressRange {
  const slash = cidr.indexOf('/');
  const address = slash === -1 ? cidr : cidr.slice(0, slash);
  const groups = groupsOf(address);
  if (!groups) throw new Error(`"${cidr}" is neither a hop count, an address, a CIDR block nor one of ${Object.keys(NAMED_RANGES).join(', ')}`);
  const ipv4 = address.includes('.') && !address.includes(':');
  const width = ipv4 ? 32 : 128;
  const bits = slash === -1 ? String(width) : cidr.slice(slash + 1);
  if (!/^\d{1,3}$/.test(bits) || Number(bits) > width) throw new Error(`"${cidr}" has a prefix length outside 0..${width}`);
  return { groups, prefix: Number(bits) + (ipv4 ? 96 : 0) };
}

/** Whether `address` (IPv4, IPv6 or IPv4-mapped IPv6) lies in one of `ranges`. */
export function inRanges(address: string, ranges: readonly AddressRange[]): boolean {
  const groups = groupsOf(address);
  if (!groups) return false;
  return ranges.some((range) => inRange(groups, range));
}

function inRange(groups: readonly number[], range: AddressRange): boolean {
  let left = range.prefix;
  for (let at = 0; at < 8 && left > 0; at++, left -= 16) {
    const mask = left >= 16 ? 0xffff : (0xffff << (16 - left)) & 0xffff;
    if ((groups[at]! & mask) !== (range.groups[at]! & mask)) return false;
  }
  return true;
}

/** An address as eight 16-bit groups, IPv4 mapped into ::ffff:0:0/96; undefined when it is not an address. */
function groupsOf(text: string): number[] | undefined {
  const percent = text.indexOf('%');
  const address = percent === -1 ? text : text.slice(0, percent);
  const family = isIP(address);
  if (family === 4) return [0, 0, 0, 0, 0, 0xffff, ...ipv4Groups(address)];
  if (family !== 6) return undefined;
  const double = address.indexOf('::');
  const head = double === -1 ? address : address.slice(0, double);
  const tail = double === -1 ? '' : address.slice(double + 2);
  const parse = (part: string): number[] => {
    if (part === '') return [];
    const out: number[] = [];
    for (const group of part.split(':')) {
      if (group.includes('.')) out.push(...ipv4Groups(group));
      else out.push(parseInt(group, 16));
    }
    return out;
  };
  const left = parse(head);
  const right = parse(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

function ipv4Groups(address: string): [number, number] {
  const [a = 0, b = 0, c = 0, d = 0] = address.split('.').map(Number);
  return [(a << 8) | b, (c << 8) | d];
}

/** What a request says about where it came from. */
export interface ForwardingFacts {
  /** The connection's TCP peer. */
  peer: string | undefined;
  /** The source a PROXY protocol header named for the connection, when a trusted peer sent one. */
  proxied?: string | undefined;
  /** `X-Forwarded-For`, every line (node joins repeated lines with ", "). */
  xForwardedFor?: string | string[] | undefined;
  /** RFC 7239 `Forwarded`, every line. */
  forwarded?: string | string[] | undefined;
}

/** One element of a `Forwarded` header: the parameters one proxy wrote. */
export interface ForwardedElement {
  for?: string;
  proto?: string;
  host?: string;
}

export interface ResolvedClient {
  /** The client: the nearest hop that is not trusted, or the farthest named hop when all are. */
  address: string | undefined;
  /** The trusted proxies between the client and this server, farthest first; the last one is the connection's peer. Empty when the client connected directly. */
  proxies: string[];
  /** Whether the hop that wrote this request's headers is trusted, so its `X-Forwarded-Proto`/`-Host` and `Forwarded` `proto`/`host` are believed. */
  headersTrusted: boolean;
  /** The `Forwarded` element that named the client, when the address came from `Forwarded`. */
  element?: ForwardedElement | undefined;
}

/** A hop named by a header: an address, or a value that names none (`unknown`, `_obfuscated`, garbage). */
type Hop = string | null;

/**
 * Finds the client of a request by walking its hops from the nearest: the connection's peer, the
 * source a PROXY header named, then `X-Forwarded-For` (or `Forwarded`) from the right. Each trusted
 * hop's word about the hop before it is believed; the first hop that is not trusted is the client,
 * so values a client prepends are never reached. A value that names no address (`unknown`, an
 * obfuscated identifier, garbage) ends the walk at the trusted hop that wrote it. With both headers,
 * each is walked and the answer is used only when they agree; otherwise neither is believed and the
 * nearest hop that wrote HTTP headers is the client (a proxy writes one of them: the other may be the
 * client's own invention). Never throws.
 */
export function resolveClientAddress(facts: ForwardingFacts, trust: TrustProxy | undefined): ResolvedClient {
  const direct = facts.proxied !== undefined ? [facts.peer ?? null, facts.proxied] : [facts.peer ?? null];
  if (!trust) return { address: facts.proxied ?? facts.peer, proxies: [], headersTrusted: false };
  const trusted = trust.ranges ? (hop: string, _index: number) => inRanges(hop, trust.ranges) : (_hop: string, index: number) => index < trust.hops;
  // The hop that wrote the HTTP headers is the last of the connection's own hops.
  let headersTrusted = true;
  for (let index = 0; index < direct.length; index++) {
    const hop = direct[index];
    if (hop === null || hop === undefined || !trusted(hop, index)) headersTrusted = false;
  }
  const xff = joined(facts.xForwardedFor);
  const forwarded = joined(facts.forwarded);
  if (!headersTrusted || (xff === undefined && forwarded === undefined)) return { ...walk(direct, [], trusted), headersTrusted };
  if (forwarded === undefined) return { ...walk(direct, forwardedForHops(xff!), trusted), headersTrusted };
  const elements = parseForwarded(forwarded);
  const byForwarded = walk(
    direct,
    elements.map((element) => hopOf(element.for)),
    trusted,
  );
  if (byForwarded.index >= direct.length) byForwarded.element = elements[elements.length - 1 - (byForwarded.index - direct.length)];
  if (xff === undefined) return { ...byForwarded, headersTrusted };
  const byXff = walk(direct, forwardedForHops(xff), trusted);
  if (byXff.address === byForwarded.address) return { ...byXff, headersTrusted };
  return { ...walk(direct, [], trusted), headersTrusted };
}

interface Walked {
  address: string | undefined;
  proxies: string[];
  /** Where the client is in the chain: connection hops first, then header hops from the right. */
  index: number;
  element?: ForwardedElement | undefined;
}

/** Walks `direct` (nearest first) then `named` (as written, so farthest first) from the nearest hop. */
function walk(direct: Hop[], named: Hop[], trusted: (hop: string, index: number) => boolean): Walked {
  const proxies: string[] = [];
  const total = direct.length + named.length;
  let index = 0;
  let hop = direct[0] ?? null;
  for (;;) {
    if (hop === null) break;
    if (!trusted(hop, index) || index + 1 >= total || proxies.length >= MAX_HOPS) return { address: hop, proxies: proxies.reverse(), index };
    const next = index + 1 < direct.length ? direct[index + 1]! : named[named.length - 1 - (index + 1 - direct.length)]!;
    // A trusted hop that names no address for the hop before it: it is the nearest hop known.
    if (next === null) return { address: hop, proxies: proxies.reverse(), index };
    proxies.push(hop);
    hop = next;
    index++;
  }
  return { address: undefined, proxies: proxies.reverse(), index };
}

function joined(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string') return value;
  return value.length === 0 ? undefined : value.join(',');
}

/** The hops of an `X-Forwarded-For` value, as written (farthest first). */
function forwardedForHops(value: string): Hop[] {
  return value.split(',').map((item) => hopOf(item.trim()));
}

/**
 * An address named by a header, without brackets or port (`[2001:db8::1]:4711`, `192.0.2.1:80`);
 * null for a value that names none.
 */
function hopOf(value: string | undefined): Hop {
  if (value === undefined || value === '') return null;
  let address = value;
  if (address.startsWith('[')) {
    const close = address.indexOf(']');
    if (close === -1) return null;
    address = address.slice(1, close);
  } else {
    const colon = address.indexOf(':');
    // One colon: IPv4 with a port; more: a bare IPv6 address.
    if (colon !== -1 && address.indexOf(':', colon + 1) === -1) address = address.slice(0, colon);
  }
  return isIP(address) === 0 ? null : address.toLowerCase();
}

/**
 * The elements of an RFC 7239 `Forwarded` value, in order: `for`, `proto` and `host` of each, quoted
 * strings unquoted (commas and semicolons inside them kept). Malformed pairs are skipped.
 */
export function parseForwarded(value: string): ForwardedElement[] {
  const elements: ForwardedElement[] = [];
  let element: ForwardedElement = {};
  let at = 0;
  const length = value.length;
  while (at <= length) {
    // One pair: name '=' (token | quoted-string), up to ';' or ',' or the end.
    let nameEnd = at;
    while (nameEnd < length && value[nameEnd] !== '=' && value[nameEnd] !== ';' && value[nameEnd] !== ',') nameEnd++;
    const name = value.slice(at, nameEnd).trim().toLowerCase();
    let pairValue: string | undefined;
    at = nameEnd;
    if (value[at] === '=') {
      at++;
      while (value[at] === ' ' || value[at] === '\t') at++;
      if (value[at] === '"') {
        let text = '';
        at++;
        while (at < length && value[at] !== '"') {
          if (value[at] === '\\' && at + 1 < length) at++;
          text += value[at];
          at++;
        }
        at++; // the closing quote
        pairValue = text;
        while (at < length && value[at] !== ';' && value[at] !== ',') at++;
      } else {
        const start = at;
        while (at < length && value[at] !== ';' && value[at] !== ',') at++;
        pairValue = value.slice(start, at).trim();
      }
    }
    if (pairValue !== undefined && (name === 'for' || name === 'proto' || name === 'host') && element[name] === undefined) element[name] = pairValue;
    if (at >= length || value[at] === ',') {
      elements.push(element);
      element = {};
    }
    at++;
  }
  return elements;
}
