export { findUnsafeNumber } from './json-numbers.js';
