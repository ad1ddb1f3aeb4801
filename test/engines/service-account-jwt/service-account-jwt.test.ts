import { createHmac, generateKeyPairSync, sign } from 'node:crypto';
import {
  CLOCK_SKEW_SECONDS,
  JwtRejectedError,
  signServiceAccountJwt,
  verifyServiceAccountJwt,
  type JwtLookup,
  type JwtPublicKey,
} from '../../../src/engines/service-account-jwt/index.js';

const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);
const SECONDS = NOW / 1000;
const ACCOUNT = 'serviceaccount-aaa';
const OTHER = 'serviceaccount-bbb';
const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const otherRsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ed = generateKeyPairSync('ed25519');
const pem = (key: typeof rsa.publicKey) => key.export({ type: 'spki', format: 'pem' }).toString();

const KEYS: Record<string, JwtPublicKey> = {
  'publickey-good': { serviceAccountId: ACCOUNT, publicKey: pem(rsa.publicKey), active: true, expiresAt: null },
  'publickey-inactive': { serviceAccountId: ACCOUNT, publicKey: pem(rsa.publicKey), active: false, expiresAt: null },
  'publickey-expired': { serviceAccountId: ACCOUNT, publicKey: pem(rsa.publicKey), active: true, expiresAt: new Date(NOW - 1000) },
  'publickey-later': { serviceAccountId: ACCOUNT, publicKey: pem(rsa.publicKey), active: true, expiresAt: new Date(NOW + 60_000) },
  'publickey-other-account': { serviceAccountId: OTHER, publicKey: pem(rsa.publicKey), active: true, expiresAt: null },
  'publickey-inactive-account': { serviceAccountId: 'serviceaccount-off', publicKey: pem(rsa.publicKey), active: true, expiresAt: null },
  'publickey-gone-account': { serviceAccountId: 'serviceaccount-gone', publicKey: pem(rsa.publicKey), active: true, expiresAt: null },
  'publickey-ed25519': { serviceAccountId: ACCOUNT, publicKey: pem(ed.publicKey), active: true, expiresAt: null },
};
const ACCOUNTS: Record<string, boolean> = { [ACCOUNT]: true, [OTHER]: true, 'serviceaccount-off': false };
const lookup: JwtLookup = {
  findKey: async (id) => KEYS[id],
  accountActive: async (id) => ACCOUNTS[id],
};

const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

/** A JWT with any header and claims, signed RS256 with `key` (or with `signer`). */
function jwt(
  header: Record<string, unknown>,
  claims: Record<string, unknown>,
  signer: (input: string) => string = (input) => sign('RSA-SHA256', Buffer.from(input), rsa.privateKey).toString('base64url'),
): string {
  const input = `${b64(header)}.${b64(claims)}`;
  return `${input}.${signer(input)}`;
}

const header = { alg: 'RS256', typ: 'JWT', kid: 'publickey-good' };
const claims = { iss: ACCOUNT, sub: ACCOUNT, iat: SECONDS, exp: SECONDS + 300 };
const good = jwt(header, claims);

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** The same bytes spelled differently: the last character's unused low bit set (segments whose length is not a multiple of 4 have some). */
const withTrailingBit = (segment: string) => segment.slice(0, -1) + ALPHABET[ALPHABET.indexOf(segment.at(-1) ?? 'A') ^ 1];
const [goodHeader = '', goodPayload = '', goodSignature = ''] = good.split('.');
/** Spellings of the good JWT that decode to the same bytes: only a canonical-form check refuses them. */
const NON_CANONICAL: Array<[string, string]> = [
  ['signature with a trailing bit altered in the last character', `${goodHeader}.${goodPayload}.${withTrailingBit(goodSignature)}`],
  ['signature with base64 padding', `${goodHeader}.${goodPayload}.${goodSignature}==`],
  ['signature in base64 (+ and /) instead of base64url', `${goodHeader}.${goodPayload}.${Buffer.from(goodSignature, 'base64url').toString('base64')}`],
];

/** A signed JWT whose payload segment has unused bits (its length is not a multiple of 4), one of them then set. */
function payloadWithTrailingBit(): string {
  const padded = ['', 'x', 'xx', 'xxx'].map((pad) => ({ ...claims, pad })).find((value) => b64(value).length % 4 !== 0);
  const [h = '', p = '', sig = ''] = jwt(header, padded ?? claims).split('.');
  return `${h}.${withTrailingBit(p)}.${sig}`;
}

const REFUSED: Array<[string, { given: string; want: RegExp }]> = [
  ...NON_CANONICAL.map(([name, given]): [string, { given: string; want: RegExp }] => [name, { given, want: /signature is not base64url/ }]),
  ['payload with a trailing bit altered', { given: payloadWithTrailingBit(), want: /payload is not base64url/ }],
  ['iss missing', { given: jwt(header, { ...claims, iss: undefined }), want: /iss differs/ }],
  ['nbf a string', { given: jwt(header, { ...claims, nbf: String(SECONDS) }), want: /nbf is missing or not a number/ }],
  ['not three parts', { given: 'a.b', want: /compact JWS/ }],
  ['four parts', { given: `${good}.x`, want: /compact JWS/ }],
  ['header not JSON', { given: `${b64('nope')}.${b64(claims)}.sig`, want: /header is not JSON/ }],
  ['alg none without signature', { given: `${b64({ ...header, alg: 'none' })}.${b64(claims)}.`, want: /alg "none"/ }],
  [
    'alg HS256 signed with the public key as the secret',
    {
      given: jwt({ ...header, alg: 'HS256' }, claims, (input) => createHmac('sha256', pem(rsa.publicKey)).update(input).digest('base64url')),
      want: /alg "HS256"/,
    },
  ],
  ['alg RS512', { given: jwt({ ...header, alg: 'RS512' }, claims), want: /alg "RS512"/ }],
  ['alg PS256', { given: jwt({ ...header, alg: 'PS256' }, claims), want: /alg "PS256"/ }],
  ['alg missing', { given: jwt({ kid: 'publickey-good' }, claims), want: /alg undefined/ }],
  ['crit header', { given: jwt({ ...header, crit: ['exp'] }, claims), want: /critical/ }],
  ['typ not JWT', { given: jwt({ ...header, typ: 'at+jwt' }, claims), want: /typ/ }],
  ['kid missing', { given: jwt({ alg: 'RS256' }, claims), want: /kid is missing/ }],
  ['sub missing', { given: jwt(header, { ...claims, sub: undefined }), want: /sub is missing/ }],
  ['iss differs from sub', { given: jwt(header, { ...claims, iss: OTHER }), want: /iss differs/ }],
  ['exp missing', { given: jwt(header, { ...claims, exp: undefined }), want: /exp is missing/ }],
  ['exp a string', { given: jwt(header, { ...claims, exp: String(SECONDS + 300) }), want: /exp is missing or not a number/ }],
  ['iat missing', { given: jwt(header, { ...claims, iat: undefined }), want: /iat is missing/ }],
  ['expired beyond the skew', { given: jwt(header, { ...claims, exp: SECONDS - CLOCK_SKEW_SECONDS - 1 }), want: /expired/ }],
  ['exp more than 1 h ahead', { given: jwt(header, { ...claims, exp: SECONDS + 3600 + CLOCK_SKEW_SECONDS + 1 }), want: /1 h ahead/ }],
  ['iat in the future', { given: jwt(header, { ...claims, iat: SECONDS + CLOCK_SKEW_SECONDS + 5 }), want: /iat is in the future/ }],
  ['nbf in the future', { given: jwt(header, { ...claims, nbf: SECONDS + CLOCK_SKEW_SECONDS + 5 }), want: /not valid yet/ }],
  ['unknown key id', { given: jwt({ ...header, kid: 'publickey-nope' }, claims), want: /unknown key/ }],
  ['key of another account', { given: jwt({ ...header, kid: 'publickey-other-account' }, claims), want: /another service account/ }],
  ['inactive key', { given: jwt({ ...header, kid: 'publickey-inactive' }, claims), want: /key is inactive/ }],
  ['expired key', { given: jwt({ ...header, kid: 'publickey-expired' }, claims), want: /key has expired/ }],
  ['a non-RSA stored key', { given: jwt({ ...header, kid: 'publickey-ed25519' }, claims), want: /not an RSA key/ }],
  [
    'signed by another private key',
    { given: jwt(header, claims, (input) => sign('RSA-SHA256', Buffer.from(input), otherRsa.privateKey).toString('base64url')), want: /bad signature/ },
  ],
  ['claims changed after signing', { given: `${good.split('.')[0]}.${b64({ ...claims, exp: SECONDS + 600 })}.${good.split('.')[2]}`, want: /bad signature/ }],
  ['empty signature', { given: `${b64(header)}.${b64(claims)}.`, want: /signature is not base64url/ }],
  [
    'inactive account',
    {
      given: jwt({ ...header, kid: 'publickey-inactive-account' }, { ...claims, iss: 'serviceaccount-off', sub: 'serviceaccount-off' }),
      want: /account is inactive/,
    },
  ],
  [
    'deleted account',
    {
      given: jwt({ ...header, kid: 'publickey-gone-account' }, { ...claims, iss: 'serviceaccount-gone', sub: 'serviceaccount-gone' }),
      want: /unknown service account/,
    },
  ],
];

test.each(REFUSED)('refuses a JWT when: %s', async (_name, { given, want }) => {
  const error = await verifyServiceAccountJwt(given, lookup, NOW).catch((reason: unknown) => reason);
  expect(error).toBeInstanceOf(JwtRejectedError);
  expect((error as JwtRejectedError).reason).toMatch(want);
});

const ACCEPTED: Array<[string, { given: string; want: string }]> = [
  [
    'a JWT as the command-line client signs it',
    { given: signServiceAccountJwt({ serviceAccountId: ACCOUNT, keyId: 'publickey-good', privateKey: rsa.privateKey }, { now: NOW }), want: ACCOUNT },
  ],
  ['exp just inside the skew in the past', { given: jwt(header, { ...claims, exp: SECONDS - CLOCK_SKEW_SECONDS + 1 }), want: ACCOUNT }],
  ['exp exactly 1 h ahead', { given: jwt(header, { ...claims, exp: SECONDS + 3600 }), want: ACCOUNT }],
  ['no typ header', { given: jwt({ alg: 'RS256', kid: 'publickey-good' }, claims), want: ACCOUNT }],
  ['a key that expires later', { given: jwt({ ...header, kid: 'publickey-later' }, claims), want: ACCOUNT }],
  ['nbf in the past', { given: jwt(header, { ...claims, nbf: SECONDS - 10 }), want: ACCOUNT }],
  ['nbf just inside the skew ahead', { given: jwt(header, { ...claims, nbf: SECONDS + CLOCK_SKEW_SECONDS }), want: ACCOUNT }],
];

test.each(ACCEPTED)('accepts %s', async (_name, { given, want }) => {
  await expect(verifyServiceAccountJwt(given, lookup, NOW)).resolves.toMatchObject({ serviceAccountId: want });
});

test.each(NON_CANONICAL)('%s spells the same signature bytes (so only the canonical check refuses it)', (_name, given) => {
  const [, , signature = ''] = given.split('.');
  expect(signature).not.toBe(goodSignature);
  expect(
    Buffer.from(signature, 'base64url').equals(Buffer.from(goodSignature, 'base64url')) ||
      Buffer.from(signature, 'base64').equals(Buffer.from(goodSignature, 'base64url')),
  ).toBe(true);
});
