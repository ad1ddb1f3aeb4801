import { readBody } from '../../http/body.js';
import { sendReply, type NodeRequest, type NodeResponse } from '../../http/reply.js';
import { GRANT_TYPE_TOKEN_EXCHANGE, TokenExchangeError, type TokenExchange, type TokenExchangeErrorCode } from '../../services/iam/token-exchange.js';

export const TOKEN_EXCHANGE_PATH = '/oauth2/token/exchange';
export const AUTHORIZATION_SERVER_METADATA_PATH = '/.well-known/oauth-authorization-server';
const JWKS_PATH = '/.well-known/jwks.json';
const BODY_LIMIT = 64 * 1024;
/** Form fields that may appear once only (RFC 6749 §3.2: parameters MUST NOT repeat). */
const SINGLE = ['grant_type', 'requested_token_type', 'subject_token', 'subject_token_type', 'actor_token', 'actor_token_type'] as const;

/**
 * RFC 6749 §5.2: every error of the token endpoint is 400, `invalid_grant` (a JWT that does not
 * prove a service account) included; 401 belongs to `invalid_client`, and this endpoint has no
 * client authentication. RFC 8693 §2.2.2 adds `invalid_target`, 400 as well.
 */
const STATUS: Record<TokenExchangeErrorCode, number> = { invalid_request: 400, unsupported_grant_type: 400, invalid_grant: 400, invalid_target: 400 };

function send(res: NodeResponse, status: number, body: unknown, extra: Record<string, string> = {}): void {
  // Token responses must never be cached (RFC 6749 §5.1).
  sendReply(res, { status, body, headers: { 'cache-control': 'no-store', pragma: 'no-cache', ...extra } }, undefined, false);
}

function refuse(res: NodeResponse, code: TokenExchangeErrorCode, description: string): void {
  send(res, STATUS[code], { error: code, error_description: description });
}

/**
 * `POST /oauth2/token/exchange` (docs/iam.md, "With curl (HTTP exchange)"): an RFC 8693 form in, the access
 * token JSON out, RFC 6749 error bodies. The rules are the TokenExchange service's, shared with gRPC.
 */
export async function handleTokenExchange(exchange: TokenExchange, req: NodeRequest, res: NodeResponse, origin: string): Promise<string> {
  if (req.method !== 'POST') {
    send(res, 405, { error: 'invalid_request', error_description: 'use POST' }, { allow: 'POST' });
    return TOKEN_EXCHANGE_PATH;
  }
  const contentType = (req.headers['content-type'] ?? '').split(';', 1)[0]?.trim().toLowerCase();
  if (contentType !== 'application/x-www-form-urlencoded') {
    req.resume();
    refuse(res, 'invalid_request', 'the body must be application/x-www-form-urlencoded');
    return TOKEN_EXCHANGE_PATH;
  }
  let body: Buffer;
  try {
    body = await readBody(req, BODY_LIMIT);
  } catch {
    refuse(res, 'invalid_request', `the body must be at most ${BODY_LIMIT} bytes`);
    return TOKEN_EXCHANGE_PATH;
  }
  const text = body.toString('utf8');
  if (/%(?![0-9A-Fa-f]{2})/.test(text)) {
    refuse(res, 'invalid_request', 'the body is not valid form encoding');
    return TOKEN_EXCHANGE_PATH;
  }
  const form = new URLSearchParams(text);
  for (const name of SINGLE) {
    if (form.getAll(name).length > 1) {
      refuse(res, 'invalid_request', `${name} must appear once`);
      return TOKEN_EXCHANGE_PATH;
    }
  }
  try {
    const result = await exchange.exchange(
      {
        grantType: form.get('grant_type') ?? '',
        requestedTokenType: form.get('requested_token_type') ?? '',
        subjectToken: form.get('subject_token') ?? '',
        subjectTokenType: form.get('subject_token_type') ?? '',
        actorToken: form.get('actor_token') ?? '',
        actorTokenType: form.get('actor_token_type') ?? '',
      },
      // RFC 8693 §2.1: resource and audience may each repeat; `scope` is accepted and ignored (docs/iam.md).
      { resources: form.getAll('resource'), audiences: form.getAll('audience'), origin },
    );
    send(res, 200, { access_token: result.accessToken, issued_token_type: result.issuedTokenType, token_type: result.tokenType, expires_in: result.expiresIn });
  } catch (error) {
    if (!(error instanceof TokenExchangeError)) throw error;
    refuse(res, error.code, error.description);
  }
  return TOKEN_EXCHANGE_PATH;
}

/**
 * RFC 8414 authorization server metadata, filled from the origin the client reached: the issuer is
 * that origin, the token endpoint the RFC 8693 exchange, the keys the server's JWKS. Metadata
 * changes only with a new release, so clients may cache it for an hour.
 */
export function handleAuthorizationServerMetadata(req: NodeRequest, res: NodeResponse, origin: string): string {
  const metadata = {
    issuer: origin,
    token_endpoint: `${origin}${TOKEN_EXCHANGE_PATH}`,
    jwks_uri: `${origin}${JWKS_PATH}`,
    grant_types_supported: [GRANT_TYPE_TOKEN_EXCHANGE],
    // The token endpoint authenticates no client: the subject token (a service account's JWT) is the proof.
    token_endpoint_auth_methods_supported: ['none'],
    // RFC 8414 §2 requires the member; there is no authorization endpoint, so no response type.
    response_types_supported: [],
    service_documentation: `${origin}/docs`,
  };
  // Filled from Host: a shared cache must key it on the host as well.
  sendReply(res, { status: 200, body: metadata, headers: { 'cache-control': 'public, max-age=3600', vary: 'Host' } }, undefined, req.method === 'HEAD');
  return AUTHORIZATION_SERVER_METADATA_PATH;
}
