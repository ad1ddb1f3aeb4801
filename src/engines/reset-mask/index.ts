export { fieldPathsOf, mergeResetMasks, resetMasksEqual, subMask, type ResetMask } from './reset-mask.js';
export { parseResetMask, ResetMaskParseError } from './parse-reset-mask.js';
export { printResetMask } from './print-reset-mask.js';
export { applyResetMask, ImmutableFieldError } from './apply-reset-mask.js';
export { canonicalResetMaskHeader, resetMaskFromHeaderValues } from './reset-mask-header.js';
