import { jest } from '@jest/globals';
import { budget } from './budget.js';

// The default for every test and hook of a file that names none: a server start plus a few requests
// take up to 10 s on a quiet host (PGlite load, app build, argon2 hashes for the first accounts).
jest.setTimeout(budget(10_000));
