export { findUnsafeNumber, type UnsafeNumber } from './json-numbers.js';
