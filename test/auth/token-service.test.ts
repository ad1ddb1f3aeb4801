import { jest } from '@jest/globals';
import { createHmac, createPrivateKey, randomUUID, sign, type KeyObject } from 'node:crypto';
import { TOKEN_ISSUER, TokenService } from '../../src/auth/token-service.js';
import { AppError } from '../../src/errors.js';
import type { Database } from '../../src/store/database.js';
import { openTestDatabase } from '../support/app.js';

let db: Database;
let drop: () => Promise<void>;
let tokens: TokenService;
/** The server's current signing key, read from the store: forged cases below are validly signed. */
let serverKey: { kid: string; privateKey: KeyObject };
beforeAll(async () => {
  ({ db, drop } = await openTestDatabase());
  tokens = await TokenService.create(db.knex);
  const row = (await db.knex('signing_keys').whereNull('retired_at').orderBy('created_at', 'desc').first()) as { kid: string; private_key_pem: string };
  serverKey = { kid: row.kid, privateKey: createPrivateKey(row.private_key_pem) };
});
afterAll(async () => {
  await db?.close();
  await drop?.();
});

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const partsOf = (token: string) => {
  const [header, payload, signature] = token.split('.');
  return { header: header ?? '', payload: payload ?? '', signature: signature ?? '' };
};
const now = () => Math.floor(Date.now() / 1000);
/** A token with these claims, signed by the server's own key: only the claim checks can refuse it. */
function signedByServer(claims: Record<string, unknown>, header: Record<string, unknown> = {}): string {
  const input = `${b64({ alg: 'EdDSA', typ: 'JWT', kid: serverKey.kid, ...header })}.${b64(claims)}`;
  return `${input}.${sign(null, Buffer.from(input), serverKey.privateKey).toString('base64url')}`;
}
const validClaims = () => ({ sub: 'user-1', aud: 'account', iss: TOKEN_ISSUER, iat: now(), exp: now() + 60 });
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** The same signature bytes, spelled with the last character's unused low bit set (an Ed25519 signature has 4 such bits). */
const withTrailingBit = (token: string) => token.slice(0, -1) + ALPHABET[ALPHABET.indexOf(token.at(-1) ?? 'A') ^ 1];
const headerOf = (token: string) => JSON.parse(Buffer.from(partsOf(token).header, 'base64url').toString('utf8')) as { alg: string; kid: string };

async function refusal(token: string, audience: 'account' | 'publishing' = 'account'): Promise<unknown> {
  return tokens.verify(token, audience).then(
    () => 'accepted',
    (error: unknown) => (error instanceof AppError ? error.code : error),
  );
}

test('a signed token verifies for its audience and carries sub, aud, iss, iat and exp', async () => {
  const token = tokens.sign({ sub: 'user-1', aud: 'account' }, 60);
  const claims = await tokens.verify(token, 'account');
  expect(claims).toMatchObject({ sub: 'user-1', aud: 'account', iss: TOKEN_ISSUER });
  expect(claims.exp - claims.iat).toBe(60);
  expect(headerOf(token)).toMatchObject({ alg: 'EdDSA', typ: 'JWT' });
});

const forged: Array<[string, () => string]> = [
  ['another audience', () => tokens.sign({ sub: 'user-1', aud: 'publishing' }, 60)],
  ['an expired token', () => tokens.sign({ sub: 'user-1', aud: 'account' }, -1)],
  [
    'a tampered signature',
    () => {
      const { header, payload, signature } = partsOf(tokens.sign({ sub: 'user-1', aud: 'account' }, 60));
      const flipped = Buffer.from(signature, 'base64url');
      flipped[0] = (flipped[0] ?? 0) ^ 0xff;
      return `${header}.${payload}.${flipped.toString('base64url')}`;
    },
  ],
  [
    'a tampered payload',
    () => {
      const { header, signature } = partsOf(tokens.sign({ sub: 'user-1', aud: 'account' }, 60));
      return `${header}.${b64({ sub: 'admin', aud: 'account', iat: 0, exp: 4102444800 })}.${signature}`;
    },
  ],
  [
    'alg none with no signature',
    () => {
      const { kid } = headerOf(tokens.sign({ sub: 'x', aud: 'account' }, 60));
      return `${b64({ alg: 'none', typ: 'JWT', kid })}.${b64({ sub: 'admin', aud: 'account', iat: 0, exp: 4102444800 })}.`;
    },
  ],
  [
    'alg none with a copied signature',
    () => {
      const { header, payload, signature } = partsOf(tokens.sign({ sub: 'user-1', aud: 'account' }, 60));
      const { kid } = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as { kid: string };
      return `${b64({ alg: 'none', kid })}.${payload}.${signature}`;
    },
  ],
  [
    'HS256 keyed with the public key (algorithm confusion)',
    () => {
      const { kid } = headerOf(tokens.sign({ sub: 'x', aud: 'account' }, 60));
      const jwk = tokens.jwks().keys.find((key) => key.kid === kid);
      const header = b64({ alg: 'HS256', typ: 'JWT', kid });
      const payload = b64({ sub: 'admin', aud: 'account', iat: 0, exp: 4102444800 });
      const mac = createHmac('sha256', JSON.stringify(jwk)).update(`${header}.${payload}`).digest('base64url');
      return `${header}.${payload}.${mac}`;
    },
  ],
  [
    'an unknown key id',
    () => {
      const { payload, signature } = partsOf(tokens.sign({ sub: 'user-1', aud: 'account' }, 60));
      return `${b64({ alg: 'EdDSA', typ: 'JWT', kid: randomUUID() })}.${payload}.${signature}`;
    },
  ],
  ['two parts only', () => tokens.sign({ sub: 'user-1', aud: 'account' }, 60).split('.').slice(0, 2).join('.')],
  ['four parts', () => `${tokens.sign({ sub: 'user-1', aud: 'account' }, 60)}.extra`],
  ['garbage', () => 'not.a.token'],
  ['a foreign iss', () => signedByServer({ ...validClaims(), iss: 'https://issuer.example' })],
  ['an iss differing only in case', () => signedByServer({ ...validClaims(), iss: TOKEN_ISSUER.toUpperCase() })],
  ['no iss (a token from before the claim existed)', () => signedByServer({ ...validClaims(), iss: undefined })],
  ['nbf in the future', () => signedByServer({ ...validClaims(), nbf: now() + 600 })],
  ['iat missing', () => signedByServer({ ...validClaims(), iat: undefined })],
  ['exp a string', () => signedByServer({ ...validClaims(), exp: String(now() + 60) })],
  ['typ other than JWT', () => signedByServer(validClaims(), { typ: 'at+jwt' })],
  ['a signature with a trailing bit altered in the last character', () => withTrailingBit(tokens.sign({ sub: 'user-1', aud: 'account' }, 60))],
  ['a signature with base64 padding', () => `${tokens.sign({ sub: 'user-1', aud: 'account' }, 60)}==`],
  [
    'a padded header',
    () => {
      const { header, payload, signature } = partsOf(tokens.sign({ sub: 'user-1', aud: 'account' }, 60));
      return `${header}=.${payload}.${signature}`;
    },
  ],
];

test.each(forged)('%s is refused as unauthenticated', async (_case, make) => {
  expect(await refusal(make())).toBe('unauthenticated');
});

test('sign() sets iss itself: a caller cannot choose another issuer', async () => {
  const token = tokens.sign({ sub: 'user-1', aud: 'account', iss: 'https://issuer.example' }, 60);
  await expect(tokens.verify(token, 'account')).resolves.toMatchObject({ iss: TOKEN_ISSUER });
});

test('the forged cases are refused for what they change: the same token built with valid claims is accepted', async () => {
  await expect(tokens.verify(signedByServer(validClaims()), 'account')).resolves.toMatchObject({ sub: 'user-1' });
  await expect(tokens.verify(signedByServer({ ...validClaims(), nbf: now() - 5 }), 'account')).resolves.toMatchObject({ sub: 'user-1' });
});

test('a token altered in its trailing bits is refused even after the original was verified and cached', async () => {
  const token = tokens.sign({ sub: 'user-1', aud: 'account' }, 60);
  await tokens.verify(token, 'account');
  const altered = withTrailingBit(token);
  expect(Buffer.from(partsOf(altered).signature, 'base64url')).toEqual(Buffer.from(partsOf(token).signature, 'base64url'));
  expect(await refusal(altered)).toBe('unauthenticated');
});

test("a token with a cached token's signature but other claims is not answered from the cache", async () => {
  // The cache is keyed by the signature's tail: a payload swapped under the same signature must miss it and be refused.
  const token = tokens.sign({ sub: 'user-1', aud: 'account' }, 60);
  await tokens.verify(token, 'account');
  const { header, signature } = partsOf(token);
  const swapped = `${header}.${b64({ ...validClaims(), sub: 'admin' })}.${signature}`;
  expect(tokens.verifyCached(swapped, 'account')).toBeUndefined();
  expect(await refusal(swapped)).toBe('unauthenticated');
  expect(tokens.verifyCached(token, 'account')?.sub).toBe('user-1');
});

test('a token that expires while cached is refused from then on', async () => {
  const token = tokens.sign({ sub: 'user-1', aud: 'account' }, 5);
  await tokens.verify(token, 'account');
  const now = Date.now();
  const clock = jest.spyOn(Date, 'now').mockReturnValue(now + 6000);
  try {
    expect(await refusal(token)).toBe('unauthenticated');
  } finally {
    clock.mockRestore();
  }
});

test('rotation signs with a new key and keeps tokens of the old one valid', async () => {
  const before = tokens.sign({ sub: 'user-1', aud: 'account' }, 60);
  const newKid = await tokens.rotate();
  const after = tokens.sign({ sub: 'user-1', aud: 'account' }, 60);
  expect(headerOf(after).kid).toBe(newKid);
  expect(headerOf(before).kid).not.toBe(newKid);
  await expect(tokens.verify(before, 'account')).resolves.toMatchObject({ sub: 'user-1' });
  await expect(tokens.verify(after, 'account')).resolves.toMatchObject({ sub: 'user-1' });
  expect(tokens.jwks().keys.map((key) => key.kid)).toEqual(expect.arrayContaining([headerOf(before).kid, newKid]));
});

test("a second TokenService on the same database (another process) verifies the first one's tokens, also after a rotation", async () => {
  const other = await TokenService.create(db.knex);
  const token = tokens.sign({ sub: 'user-2', aud: 'account' }, 60);
  await expect(other.verify(token, 'account')).resolves.toMatchObject({ sub: 'user-2' });
  // The other process signs with the same current key, so its tokens verify here too.
  expect(headerOf(other.sign({ sub: 'user-3', aud: 'account' }, 60)).kid).toBe(headerOf(token).kid);

  const rotatedKid = await tokens.rotate();
  const fresh = tokens.sign({ sub: 'user-2', aud: 'account' }, 60);
  // Unknown key ids trigger at most one reload a second; step the clock past that instead of sleeping.
  const now = Date.now();
  const clock = jest.spyOn(Date, 'now').mockReturnValue(now + 1500);
  try {
    await expect(other.verify(fresh, 'account')).resolves.toMatchObject({ sub: 'user-2' });
  } finally {
    clock.mockRestore();
  }
  expect(headerOf(fresh).kid).toBe(rotatedKid);
});
