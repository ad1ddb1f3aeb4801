const BASE64URL = /^[A-Za-z0-9_-]+$/;
const PARTS = ['header', 'payload', 'signature'] as const;

/**
 * Why `token` is not a compact JWS in canonical form, or undefined when it is: exactly three
 * non-empty segments, each unpadded base64url that decodes and re-encodes to itself. jose (like most
 * decoders) accepts padding and ignores the unused low bits of the last character, so one signature
 * has several spellings; refusing all but one keeps a token string a single identity (caches, logs,
 * replay checks key on it) and leaves nothing to malleate.
 */
export function canonicalJwsProblem(token: string): string | undefined {
  const segments = token.split('.');
  if (segments.length !== 3) return 'not a compact JWS (three dot-separated parts)';
  for (const [index, segment] of segments.entries()) {
    const canonical = BASE64URL.test(segment) && Buffer.from(segment, 'base64url').toString('base64url') === segment;
    if (!canonical) return `the ${PARTS[index] ?? 'segment'} is not base64url (canonical, unpadded)`;
  }
  return undefined;
}
