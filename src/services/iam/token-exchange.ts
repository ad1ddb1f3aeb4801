import type { TokenService } from '../../auth/token-service.js';
import { JwtRejectedError, verifyServiceAccountJwt, type JwtLookup } from '../../engines/service-account-jwt/index.js';

export const GRANT_TYPE_TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const TOKEN_TYPE_ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
export const TOKEN_TYPE_JWT = 'urn:ietf:params:oauth:token-type:jwt';

/** The RFC 6749 §5.2 and RFC 8693 §2.2.2 error codes the exchange answers with. */
export type TokenExchangeErrorCode = 'invalid_request' | 'invalid_grant' | 'unsupported_grant_type' | 'invalid_target';

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

/**
 * Where the caller means to use the token (RFC 8693 §2.1 `resource` and `audience`, each may repeat)
 * and the origin the request reached (`http://host:port`), which names this server.
 */
export interface ExchangeTargets {
  resources: readonly string[];
  audiences: readonly string[];
  origin: string;
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
    /** The `api_service_name`s this server serves (`compute`, `cpl.iam`…) and API_DOMAIN: what a token can be for. */
    private readonly served: { serviceNames(): ReadonlySet<string>; apiDomain?: string } = { serviceNames: () => new Set() },
  ) {}

  /**
   * Whether a token of this server serves `target`: the token works on every cloud service here
   * and nowhere else, so an audience must be this server's origin (the issuer of its RFC 8414
   * metadata) or one of its `api_service_name`s, and a resource an absolute http(s) URI without a
   * fragment (RFC 8707) on this server's origin or on `<api_service_name>.<API_DOMAIN>`.
   */
  private issuesFor(kind: 'resource' | 'audience', target: string, origin: string): boolean {
    const names = this.served.serviceNames();
    if (kind === 'audience' && (target === origin || names.has(target))) return true;
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      return false;
    }
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || target.includes('#')) return false;
    if (url.origin === origin) return true;
    const domain = this.served.apiDomain;
    return domain !== undefined && url.hostname.endsWith(`.${domain}`) && names.has(url.hostname.slice(0, -domain.length - 1));
  }

  async exchange(request: TokenExchangeRequest, targets?: ExchangeTargets): Promise<TokenExchangeResult> {
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
    if (targets) {
      for (const [kind, values] of [
        ['resource', targets.resources],
        ['audience', targets.audiences],
      ] as const) {
        const refused = values.find((value) => !this.issuesFor(kind, value, targets.origin));
        if (refused !== undefined) throw new TokenExchangeError('invalid_target', `this server issues no token for the ${kind} "${refused}"`);
      }
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
