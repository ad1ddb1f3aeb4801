import type { TokenService } from '../../auth/token-service.js';
import { JwtRejectedError, verifyServiceAccountJwt, type JwtLookup } from '../../engines/service-account-jwt/index.js';

export const GRANT_TYPE_TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const TOKEN_TYPE_ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
export const TOKEN_TYPE_JWT = 'urn:ietf:params:oauth:token-type:jwt';

/** The RFC 6749 §5.2 error codes the exchange answers with. */
export type TokenExchangeErrorCode = 'invalid_request' | 'invalid_grant' | 'unsupported_grant_type';

/** A refused exchange, protocol-neutral: HTTP renders it as RFC 6749 JSON, gRPC as a status code. */
export class TokenExchangeError extends Error {
  override name = 'TokenExchangeError';
  constructor(
    readonly code: TokenExchangeErrorCode,
    readonly description: string,
    /** Why a JWT was refused (for the log only; clients see `description`). */
    readonly reason?: string,
  ) {
    super(description);
  }
}

/** The RFC 8693 request fields (gRPC camelCase; HTTP maps its snake_case form fields onto them). */
export interface TokenExchangeRequest {
  grantType: string;
  requestedTokenType: string;
  subjectToken: string;
  subjectTokenType: string;
  actorToken: string;
  actorTokenType: string;
}

export interface TokenExchangeResult {
  accessToken: string;
  issuedTokenType: string;
  tokenType: 'Bearer';
  expiresIn: number;
}

/**
 * The token exchange (docs/iam.md): a service account's self-signed JWT in, an access token of the one
 * TokenService (audience `service-account`, `IAM_TOKEN_TTL`) out. gRPC and HTTP call this same code.
 */
export class TokenExchange {
  constructor(
    private readonly tokens: TokenService,
    private readonly lookup: JwtLookup,
    private readonly ttlSeconds: number,
    private readonly onRefused: (reason: string) => void = () => undefined,
  ) {}

  async exchange(request: TokenExchangeRequest): Promise<TokenExchangeResult> {
    if (request.grantType === '') throw new TokenExchangeError('invalid_request', 'grant_type is required');
    if (request.grantType !== GRANT_TYPE_TOKEN_EXCHANGE) {
      throw new TokenExchangeError('unsupported_grant_type', `grant_type must be ${GRANT_TYPE_TOKEN_EXCHANGE}`);
    }
    if (request.requestedTokenType !== '' && request.requestedTokenType !== TOKEN_TYPE_ACCESS_TOKEN) {
      throw new TokenExchangeError('invalid_request', `requested_token_type must be ${TOKEN_TYPE_ACCESS_TOKEN}`);
    }
    if (request.subjectToken === '') throw new TokenExchangeError('invalid_request', 'subject_token is required');
    if (request.subjectTokenType !== TOKEN_TYPE_JWT) throw new TokenExchangeError('invalid_request', `subject_token_type must be ${TOKEN_TYPE_JWT}`);
    if (request.actorToken !== '' || request.actorTokenType !== '') {
      throw new TokenExchangeError('invalid_request', 'actor_token (delegation) is not supported');
    }
    let serviceAccountId: string;
    try {
      ({ serviceAccountId } = await verifyServiceAccountJwt(request.subjectToken, this.lookup));
    } catch (error) {
      if (error instanceof JwtRejectedError) {
        this.onRefused(error.reason);
        throw new TokenExchangeError('invalid_grant', 'the subject token is not a valid service account JWT', error.reason);
      }
      throw error;
    }
    return {
      accessToken: this.tokens.sign({ sub: serviceAccountId, aud: 'service-account' }, this.ttlSeconds),
      issuedTokenType: TOKEN_TYPE_ACCESS_TOKEN,
      tokenType: 'Bearer',
      expiresIn: this.ttlSeconds,
    };
  }
}
