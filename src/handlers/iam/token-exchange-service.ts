import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { TokenExchangeService as TokenExchangeServiceDesc } from '../../../generated/proto/cloud/iam/v1/token_exchange_service_pb.js';
import { AppError } from '../../errors.js';
import { TokenExchangeError, type TokenExchange } from '../../services/iam/token-exchange.js';

/** The gRPC code of a refused exchange: a bad JWT is UNAUTHENTICATED, a malformed request INVALID_ARGUMENT. */
function exchangeErrorToAppError(error: TokenExchangeError): AppError {
  if (error.code === 'invalid_grant') return new AppError('unauthenticated', error.description);
  const field = error.code === 'invalid_target' ? 'audience' : (/^(\w+)/.exec(error.description)?.[1] ?? '');
  return new AppError('invalid_argument', error.description, {
    violations: [{ field: error.code === 'unsupported_grant_type' ? 'grant_type' : field, message: error.description }],
  });
}

/** iam.v1.TokenExchangeService: the same exchange as `POST /oauth2/token/exchange`, over gRPC. */
export function tokenExchangeServiceImpl(exchange: TokenExchange, originOf: (context: HandlerContext) => string): ServiceImpl<typeof TokenExchangeServiceDesc> {
  return {
    async exchange(request, context) {
      try {
        // The same target rule as over HTTP (RFC 8693 `audience`); gRPC has no `resource`.
        const targets = { resources: [], audiences: request.audience === '' ? [] : [request.audience], origin: originOf(context) };
        const result = await exchange.exchange(request, targets);
        return { ...result, expiresIn: BigInt(result.expiresIn) };
      } catch (error) {
        if (error instanceof TokenExchangeError) throw exchangeErrorToAppError(error);
        throw error;
      }
    },
  };
}
