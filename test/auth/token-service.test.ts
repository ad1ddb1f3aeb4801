import { jest } from '@jest/globals';
import { createHmac, randomUUID } from 'node:crypto';
import { TokenService } from '../../src/auth/token-service.js';
import { AppError } from '../../src/errors.js';
import type { Database } from '../../src/store/database.js';
import { openTestDatabase } from '../support/app.js';

let db: Database;
let drop: () => Promise<void>;
let tokens: TokenService;
beforeAll(async () => {
  ({ db, drop } = await openTestDatabase());
  tokens = await TokenService.create(db.knex);
});
afterAll(async () => {
  await db.close();
  await drop();
});

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const partsOf = (token: string) => {
  const [header, payload, signature] = token.split('.');
  return { header: header ?? '', payload: payload ?? '', signature: signature ?? '' };
};
const headerOf = (token: string) => JSON.parse(Buffer.from(partsOf(token).header, 'base64url').toString('utf8')) as { alg: string; kid: string };

async function refusal(token: string, audience: 'account' | 'publishing' = 'account'): Promise<unknown> {
  return tokens.verify(token, audience).then(
    () => 'accepted',
    (error: unknown) => (error instanceof AppError ? error.code : error),
  );
}

test('a signed token verifies for its audience and carries sub, aud, iat and exp', async () => {
  const token = tokens.sign({ sub: 'user-1', aud: 'account' }, 60);
  const claims = await tokens.verify(token, 'account');
  expect(claims).toMatchObject({ sub: 'user-1', aud: 'account' });
  expect(claims.exp - claims.iat).toBe(60);
  expect(headerOf(token)).toMatchObject({ alg: 'EdDSA', typ: 'JWT' });
});

const forged: Array<[string, () => string]> = [
  ['another audience', () => tokens.sign({ sub: 'user-1', aud: 'publishing' }, 60)],
  ['an expired token', () => tokens.sign({ sub: 'user-1', aud: 'account' }, -1)],
  ['a tampered signature', () => {
    const { header, payload, signature } = partsOf(tokens.sign({ sub: 'user-1', aud: 'account' }, 60));
    const flipped = Buffer.from(signature, 'base64url');
    flipped[0] = (flipped[0] ?? 0) ^ 0xff;
    return `${header}.${payload}.${flipped.toString('base64url')}`;
  }],
  ['a tampered payload', () => {
    const { header, signature } = partsOf(tokens.sign({ sub: 'user-1', aud: 'account' }, 60));
    return `${header}.${b64({ sub: 'admin', aud: 'account', iat: 0, exp: 4102444800 })}.${signature}`;
  }],
  ['alg none with no signature', () => {
    const { kid } = headerOf(tokens.sign({ sub: 'x', aud: 'account' }, 60));
    return `${b64({ alg: 'none', typ: 'JWT', kid })}.${b64({ sub: 'admin', aud: 'account', iat: 0, exp: 4102444800 })}.`;
  }],
  ['alg none with a copied signature', () => {
    const { header, payload, signature } = partsOf(tokens.sign({ sub: 'user-1', aud: 'account' }, 60));
    const { kid } = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as { kid: string };
    return `${b64({ alg: 'none', kid })}.${payload}.${signature}`;
  }],
  ['HS256 keyed with the public key (algorithm confusion)', () => {
    const { kid } = headerOf(tokens.sign({ sub: 'x', aud: 'account' }, 60));
    const jwk = tokens.jwks().keys.find((key) => key.kid === kid);
    const header = b64({ alg: 'HS256', typ: 'JWT', kid });
    const payload = b64({ sub: 'admin', aud: 'account', iat: 0, exp: 4102444800 });
    const mac = createHmac('sha256', JSON.stringify(jwk)).update(`${header}.${payload}`).digest('base64url');
    return `${header}.${payload}.${mac}`;
  }],
  ['an unknown key id', () => {
    const { payload, signature } = partsOf(tokens.sign({ sub: 'user-1', aud: 'account' }, 60));
    return `${b64({ alg: 'EdDSA', typ: 'JWT', kid: randomUUID() })}.${payload}.${signature}`;
  }],
  ['two parts only', () => tokens.sign({ sub: 'user-1', aud: 'account' }, 60).split('.').slice(0, 2).join('.')],
  ['four parts', () => `${tokens.sign({ sub: 'user-1', aud: 'account' }, 60)}.extra`],
  ['garbage', () => 'not.a.token'],
];

test.each(forged)('%s is refused as unauthenticated', async (_case, make) => {
  expect(await refusal(make())).toBe('unauthenticated');
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

test('a second TokenService on the same database (another process) verifies the first one\'s tokens, also after a rotation', async () => {
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
