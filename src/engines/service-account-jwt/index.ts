export {
  verifyServiceAccountJwt,
  JwtRejectedError,
  JWT_ALGORITHM,
  MAX_JWT_LIFETIME_SECONDS,
  CLOCK_SKEW_SECONDS,
  type JwtLookup,
  type JwtPublicKey,
  type VerifiedServiceAccountJwt,
} from './verify-service-account-jwt.js';
export { signServiceAccountJwt, DEFAULT_JWT_TTL_SECONDS } from './sign-service-account-jwt.js';
export { canonicalJwsProblem } from './canonical-jws.js';
