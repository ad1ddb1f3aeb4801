export { verifyServiceAccountJwt, JwtRejectedError, CLOCK_SKEW_SECONDS, type JwtLookup, type JwtPublicKey } from './verify-service-account-jwt.js';
export { signServiceAccountJwt } from './sign-service-account-jwt.js';
export { canonicalJwsProblem } from './canonical-jws.js';
