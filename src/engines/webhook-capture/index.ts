export { BodyCollector, captureWebhookRequest, type BodyBytes, type CaptureInput, type CapturedRecord } from './capture-request.js';
export { describeCapturedRequest, type CapturedRequestView } from './describe-captured-request.js';
export { harDocument, isReplayedHeader, replayUrl, toCurlCommand, toHarEntry } from './export-capture.js';
export { parseMultipart } from './multipart.js';
