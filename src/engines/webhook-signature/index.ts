export {
  DEFAULT_HMAC_HEADER,
  DEFAULT_TOLERANCE_SECONDS,
  SIGNATURE_SCHEMES,
  verifySignature,
  type SignatureCheck,
  type SignatureFailure,
  type SignatureScheme,
  type VerifyConfig,
} from './verify-signature.js';
