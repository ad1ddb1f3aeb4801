export { BodyCollector, captureWebhookRequest, headerLines, type BodyBytes, type CaptureInput, type CapturedRecord, type HeaderLine } from './capture-request.js';
export { describeCapturedRequest, isJsonContentType, parseUrlEncoded, type CapturedRequestView } from './describe-captured-request.js';
