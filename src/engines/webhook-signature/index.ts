export { DEFAULT_HMAC_HEADER, DEFAULT_TOLERANCE_SECONDS, verifySignature, type SignatureCheck, type VerifyConfig } from './verify-signature.js';
