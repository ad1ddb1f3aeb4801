import { isIPv6 } from 'node:net';

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
 * Whether a request comes from this machine itself: its address is a loopback address and it carries
 * no forwarding header. A reverse proxy on the same host connects from loopback for every client it
 * serves, and says so in `X-Forwarded-For`, `Forwarded` or `X-Real-IP`: such a request is not local.
 */
export function isLocalClient(address: string | undefined, headers: Record<string, string | string[] | undefined>): boolean {
  if (headers['x-forwarded-for'] !== undefined || headers.forwarded !== undefined || headers['x-real-ip'] !== undefined) return false;
  return isLoopbackAddress(address);
}

/** 127.0.0.0/8, ::1 and the IPv4-mapped form of the former. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  if (address === '::1') return true;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}
