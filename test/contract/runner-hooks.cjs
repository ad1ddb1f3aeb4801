/**
 * Hooks the contract-test runner (scripts/contract-test.ts) adds to EVERY dredd run, before the
 * contract's own hooks file. They fix what dredd gets wrong for all contracts alike and record the
 * outcome of each transaction for the runner's coverage check.
 */
const { writeFileSync } = require('node:fs');
const hooks = require('hooks');
const { contract, keyOf } = require('./support.cjs');

// Dredd compares Content-Type byte for byte; the server sends `application/json; charset=utf-8`
// where the documents say `application/json`. The parameter changes nothing about the media type.
hooks.beforeEachValidation((transaction) => {
  const headers = transaction.real && transaction.real.headers;
  if (headers && typeof headers['content-type'] === 'string') {
    headers['content-type'] = headers['content-type'].replace(/;\s*charset=utf-8/i, '');
  }
});

// Dredd ignores response headers an OpenAPI 3 document declares; check those marked required.
const doc = process.env.DREDD_CONTRACT ? contract(process.env.DREDD_CONTRACT) : undefined;
hooks.afterEach((transaction) => {
  if (!doc || transaction.skip || !transaction.real) return;
  const [method, path, status] = keyOf(transaction).split(' ');
  const real = Object.keys(transaction.real.headers || {}).map((name) => name.toLowerCase());
  const missing = doc.requiredResponseHeaders(method, path, status).filter((name) => !real.includes(name.toLowerCase()));
  if (missing.length > 0) transaction.fail = `missing required response header(s): ${missing.join(', ')}`;
});

// The outcome of every transaction, read after the after-hooks had their say.
hooks.afterAll((transactions, done) => {
  const file = process.env.DREDD_RESULTS_FILE;
  if (file) {
    const results = transactions.map((transaction) => ({
      name: transaction.name,
      // `id` is `<METHOD> (<status>) <uri>` as compiled from the document, untouched by hooks.
      method: String(transaction.id || '').split(' ')[0],
      path: String(transaction.name || '').split(' > ')[0],
      status: String(transaction.expected && transaction.expected.statusCode),
      result: transaction.skip ? 'skip' : (transaction.test && transaction.test.status) || (transaction.fail ? 'fail' : 'unknown'),
    }));
    writeFileSync(file, JSON.stringify(results));
  }
  done();
});
