import { createHmac } from 'node:crypto';
import { verifySignature, type SignatureCheck, type VerifyConfig } from '../../../src/engines/webhook-signature/index.js';

type Headers = Array<[string, string]>;
const at = (seconds: number) => new Date(seconds * 1000);
const hmac = (key: string | Buffer, data: string | Buffer) => createHmac('sha256', key).update(data).digest();

// Standard Webhooks' published example (libraries/javascript/src/webhook.test.ts, "sign function works").
const SW_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const SW_ID = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
const SW_TS = 1614265330;
const SW_PAYLOAD = '{"test": 2432232314}';
const SW_SIGNATURE = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';
const sw = (signature: string, timestamp = String(SW_TS)): Headers => [
  ['webhook-id', SW_ID],
  ['webhook-timestamp', timestamp],
  ['webhook-signature', signature],
];

// GitHub's published example (docs "Validating webhook deliveries": secret, payload and signature).
const GH_SECRET = "It's a Secret to Everybody";
const GH_PAYLOAD = 'Hello, World!';
const GH_SIGNATURE = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';

// Stripe: the scheme of docs.stripe.com/webhooks#verify-manually, signed here.
const STRIPE_SECRET = 'whsec_test_secret';
const STRIPE_TS = 1700000000;
const STRIPE_BODY = '{"id":"evt_1","object":"event"}';
const stripeV1 = (body = STRIPE_BODY, ts = STRIPE_TS, secret = STRIPE_SECRET) => hmac(secret, `${ts}.${body}`).toString('hex');

const HMAC_SECRET = 'shared';
const BINARY = Buffer.from([0, 255, 10, 13, 128]);

const config = (scheme: VerifyConfig['scheme'], secret: string, extra: Partial<VerifyConfig> = {}): VerifyConfig => ({
  scheme,
  secret,
  header: null,
  toleranceSeconds: 300,
  ...extra,
});

describe('verifySignature', () => {
  test.each<[string, { given: { config: VerifyConfig; headers: Headers; body: string | Buffer; receivedAt: Date }; want: Omit<SignatureCheck, 'scheme'> }]>([
    [
      "standard-webhooks: the spec's published example is valid",
      {
        given: { config: config('standard-webhooks', SW_SECRET), headers: sw(SW_SIGNATURE), body: SW_PAYLOAD, receivedAt: at(SW_TS + 10) },
        want: { valid: true, reason: null },
      },
    ],
    [
      'standard-webhooks: one matching signature among several (key rotation) is valid',
      {
        given: {
          config: config('standard-webhooks', SW_SECRET),
          headers: sw(`v1,${Buffer.alloc(32).toString('base64')} ${SW_SIGNATURE}`),
          body: SW_PAYLOAD,
          receivedAt: at(SW_TS),
        },
        want: { valid: true, reason: null },
      },
    ],
    [
      'standard-webhooks: a changed body matches no signature',
      {
        given: { config: config('standard-webhooks', SW_SECRET), headers: sw(SW_SIGNATURE), body: `${SW_PAYLOAD} `, receivedAt: at(SW_TS) },
        want: { valid: false, reason: 'no_signature_matches' },
      },
    ],
    [
      'standard-webhooks: a timestamp six minutes old is outside the default tolerance',
      {
        given: { config: config('standard-webhooks', SW_SECRET), headers: sw(SW_SIGNATURE), body: SW_PAYLOAD, receivedAt: at(SW_TS + 360) },
        want: { valid: false, reason: 'timestamp_outside_tolerance' },
      },
    ],
    [
      'standard-webhooks: a timestamp that is not a number is malformed',
      {
        given: { config: config('standard-webhooks', SW_SECRET), headers: sw(SW_SIGNATURE, 'hello'), body: SW_PAYLOAD, receivedAt: at(SW_TS) },
        want: { valid: false, reason: 'malformed_header' },
      },
    ],
    [
      'standard-webhooks: no webhook-signature header',
      {
        given: { config: config('standard-webhooks', SW_SECRET), headers: sw(SW_SIGNATURE).slice(0, 2), body: SW_PAYLOAD, receivedAt: at(SW_TS) },
        want: { valid: false, reason: 'no_signature_header' },
      },
    ],
    [
      'standard-webhooks: a binary body signed in the test is valid',
      {
        given: {
          config: config('standard-webhooks', SW_SECRET),
          headers: sw(
            `v1,${hmac(Buffer.from('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'base64'), Buffer.concat([Buffer.from(`${SW_ID}.${SW_TS}.`), BINARY])).toString('base64')}`,
          ),
          body: BINARY,
          receivedAt: at(SW_TS),
        },
        want: { valid: true, reason: null },
      },
    ],
    [
      "github: GitHub's published example is valid",
      {
        given: { config: config('github', GH_SECRET), headers: [['X-Hub-Signature-256', GH_SIGNATURE]], body: GH_PAYLOAD, receivedAt: at(0) },
        want: { valid: true, reason: null },
      },
    ],
    [
      'github: the wrong secret matches no signature',
      {
        given: { config: config('github', 'other'), headers: [['X-Hub-Signature-256', GH_SIGNATURE]], body: GH_PAYLOAD, receivedAt: at(0) },
        want: { valid: false, reason: 'no_signature_matches' },
      },
    ],
    [
      'github: the SHA-1 header alone is no signature header',
      {
        given: { config: config('github', GH_SECRET), headers: [['X-Hub-Signature', 'sha1=abc']], body: GH_PAYLOAD, receivedAt: at(0) },
        want: { valid: false, reason: 'no_signature_header' },
      },
    ],
    [
      'github: a value without sha256= is malformed',
      {
        given: { config: config('github', GH_SECRET), headers: [['X-Hub-Signature-256', GH_SIGNATURE.slice(7)]], body: GH_PAYLOAD, receivedAt: at(0) },
        want: { valid: false, reason: 'malformed_header' },
      },
    ],
    [
      'stripe: a v1 signature computed in the test is valid',
      {
        given: {
          config: config('stripe', STRIPE_SECRET),
          headers: [['Stripe-Signature', `t=${STRIPE_TS},v1=${stripeV1()},v0=ignored`]],
          body: STRIPE_BODY,
          receivedAt: at(STRIPE_TS + 5),
        },
        want: { valid: true, reason: null },
      },
    ],
    [
      'stripe: a signature made with another secret matches none',
      {
        given: {
          config: config('stripe', STRIPE_SECRET),
          headers: [['Stripe-Signature', `t=${STRIPE_TS},v1=${stripeV1(STRIPE_BODY, STRIPE_TS, 'whsec_other')}`]],
          body: STRIPE_BODY,
          receivedAt: at(STRIPE_TS),
        },
        want: { valid: false, reason: 'no_signature_matches' },
      },
    ],
    [
      'stripe: an old timestamp is outside the tolerance',
      {
        given: {
          config: config('stripe', STRIPE_SECRET),
          headers: [['Stripe-Signature', `t=${STRIPE_TS},v1=${stripeV1()}`]],
          body: STRIPE_BODY,
          receivedAt: at(STRIPE_TS + 301),
        },
        want: { valid: false, reason: 'timestamp_outside_tolerance' },
      },
    ],
    [
      'stripe: no t= is malformed',
      {
        given: { config: config('stripe', STRIPE_SECRET), headers: [['Stripe-Signature', `v1=${stripeV1()}`]], body: STRIPE_BODY, receivedAt: at(STRIPE_TS) },
        want: { valid: false, reason: 'malformed_header' },
      },
    ],
    [
      'hmac-sha256: a hex digest with the sha256= prefix in the named header is valid',
      {
        given: {
          config: config('hmac-sha256', HMAC_SECRET, { header: 'X-Sig' }),
          headers: [['x-sig', `sha256=${hmac(HMAC_SECRET, BINARY).toString('hex')}`]],
          body: BINARY,
          receivedAt: at(0),
        },
        want: { valid: true, reason: null },
      },
    ],
    [
      'hmac-sha256: a base64 digest is valid',
      {
        given: {
          config: config('hmac-sha256', HMAC_SECRET, { header: 'X-Sig' }),
          headers: [['X-Sig', hmac(HMAC_SECRET, BINARY).toString('base64')]],
          body: BINARY,
          receivedAt: at(0),
        },
        want: { valid: true, reason: null },
      },
    ],
    [
      'hmac-sha256: a digest of another body matches none',
      {
        given: {
          config: config('hmac-sha256', HMAC_SECRET, { header: 'X-Sig' }),
          headers: [['X-Sig', hmac(HMAC_SECRET, 'x').toString('hex')]],
          body: BINARY,
          receivedAt: at(0),
        },
        want: { valid: false, reason: 'no_signature_matches' },
      },
    ],
    [
      'hmac-sha256: text that is neither hex nor base64 of 32 bytes is malformed',
      {
        given: { config: config('hmac-sha256', HMAC_SECRET, { header: 'X-Sig' }), headers: [['X-Sig', 'not a digest']], body: BINARY, receivedAt: at(0) },
        want: { valid: false, reason: 'malformed_header' },
      },
    ],
    [
      'hmac-sha256: the header missing',
      {
        given: { config: config('hmac-sha256', HMAC_SECRET, { header: 'X-Sig' }), headers: [], body: BINARY, receivedAt: at(0) },
        want: { valid: false, reason: 'no_signature_header' },
      },
    ],
  ])('%s', (_name, { given, want }) => {
    const body = Buffer.isBuffer(given.body) ? given.body : Buffer.from(given.body);
    expect(verifySignature(given.config, { headers: given.headers, body, receivedAt: given.receivedAt })).toEqual({ scheme: given.config.scheme, ...want });
  });
});
