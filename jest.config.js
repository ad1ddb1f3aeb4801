import { availableParallelism, totalmem } from 'node:os';

/**
 * Test files run side by side only as far as the machine holds them: a worker holds a few PGlite
 * instances (~0.4 GB each) and at times a headless Chromium, and the servers it starts compete with it
 * for the same cores. So one worker per core beyond the first (jest's own default, which runs in band
 * on 2 cores), and no more workers than memory for 1.5 GB each; a worker that grew past 1 GB is
 * replaced between files. Timeouts scale with the load when each file starts (test/support/budget.ts).
 */
const WORKER_BYTES = 1.5 * 2 ** 30;
const maxWorkers = Math.max(1, Math.min(availableParallelism() - 1, Math.floor(totalmem() / WORKER_BYTES)));

/** ESM + SWC: fast TypeScript tests that load ESM-only packages (jose, PGlite). */
export default {
  testEnvironment: '<rootDir>/test/support/environment.js',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'es6' } }] },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  globalSetup: '<rootDir>/test/global-setup.js',
  globalTeardown: '<rootDir>/test/global-teardown.js',
  setupFilesAfterEnv: ['<rootDir>/test/support/setup-timeouts.ts'],
  maxWorkers,
  workerIdleMemoryLimit: '1GB',
};
