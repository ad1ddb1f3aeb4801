/**
 * Shared helpers for dredd hooks files (CommonJS: dredd loads hooks with require).
 *
 *   const { contract, api, keyOf, rewrite } = require('../support.cjs');
 *   const doc = contract('users');              // the YAML with every $ref resolved inline
 *   hooks.beforeEach((t) => doc.expectSchema(t)); // real JSON Schema validation of response bodies
 */
const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const { parse } = require('yaml');

const ROOT = join(__dirname, '..', '..');
const SERVER_URL = process.env.DREDD_SERVER_URL;
// Formats the JSON Schema validator inside dredd (ajv 6) knows; OpenAPI-only ones (int64, byte…) would abort it.
const KNOWN_FORMATS = new Set([
  'date',
  'time',
  'date-time',
  'uri',
  'uri-reference',
  'uri-template',
  'url',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'regex',
  'uuid',
  'json-pointer',
  'relative-json-pointer',
]);
const OPENAPI_ONLY = new Set(['example', 'nullable', 'discriminator', 'xml', 'externalDocs', 'deprecated']);

/** Follows `#/a/b` inside the document. */
function pointer(document, ref) {
  if (!ref.startsWith('#/')) throw new Error(`only local $refs are supported, got ${ref}`);
  return ref
    .slice(2)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((node, part) => (node === undefined ? undefined : node[part]), document);
}

/** The document with every `$ref` replaced by (a copy of) its target; cycles stop after a few levels. */
function resolve(document, node, depth = 0) {
  if (Array.isArray(node)) return node.map((item) => resolve(document, item, depth));
  if (node === null || typeof node !== 'object') return node;
  if (typeof node.$ref === 'string') {
    if (depth > 32) return {};
    return resolve(document, pointer(document, node.$ref), depth + 1);
  }
  const out = {};
  for (const [key, value] of Object.entries(node)) out[key] = resolve(document, value, depth);
  return out;
}

/**
 * An OpenAPI 3.0 schema as JSON Schema draft 7: `nullable: true` becomes a `null` type (dredd does
 * not understand `nullable`), OpenAPI-only keywords and unknown formats are dropped.
 */
function toJsonSchema(schema) {
  if (Array.isArray(schema)) return schema.map(toJsonSchema);
  if (schema === null || typeof schema !== 'object') return schema;
  const out = {};
  for (const [key, value] of Object.entries(schema)) {
    if (OPENAPI_ONLY.has(key)) continue;
    if (key === 'format' && !KNOWN_FORMATS.has(value)) continue;
    if (key === 'properties' || key === 'patternProperties') {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, toJsonSchema(sub)]));
    } else {
      out[key] = typeof value === 'object' ? toJsonSchema(value) : value;
    }
  }
  if (schema.nullable === true) {
    if (typeof out.type === 'string') out.type = [out.type, 'null'];
    else if (Array.isArray(out.type) && !out.type.includes('null')) out.type = [...out.type, 'null'];
    else return { anyOf: [out, { type: 'null' }] };
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
  }
  return out;
}

/** `METHOD /path/{template} status`: which documented response a transaction exercises. */
function keyOf(transaction) {
  const method = String(transaction.id || transaction.request.method).split(' ')[0];
  const path = String(transaction.name).split(' > ')[0];
  return `${method} ${path} ${transaction.expected.statusCode}`;
}

/** Loads `contracts/openapi/<name>.yaml`, resolved, with a helper that sets dredd's body schema. */
function contract(name) {
  const raw = parse(readFileSync(join(ROOT, 'contracts', 'openapi', `${name}.yaml`), 'utf8'));
  const document = resolve(raw, raw);
  return {
    document,
    /** The JSON Schema (draft 7) of a documented response body, or undefined. */
    responseSchema(method, path, status, mediaType = 'application/json') {
      const response = document.paths?.[path]?.[method.toLowerCase()]?.responses?.[String(status)];
      const schema = response?.content?.[mediaType]?.schema;
      return schema ? { $schema: 'http://json-schema.org/draft-07/schema#', ...toJsonSchema(schema) } : undefined;
    },
    /** Names of the headers a documented response marks `required: true`. */
    requiredResponseHeaders(method, path, status) {
      const response = document.paths?.[path]?.[method.toLowerCase()]?.responses?.[String(status)];
      return Object.entries(response?.headers ?? {})
        .filter(([, header]) => header && header.required === true)
        .map(([name]) => name);
    },
    /**
     * Validates the real body against the documented schema instead of dredd's "same keys as the
     * example" check (which makes optional fields required and checks no types).
     */
    expectSchema(transaction) {
      const [method, path, status] = keyOf(transaction).split(' ');
      const mediaType = String(transaction.expected.headers?.['Content-Type'] || transaction.expected.headers?.['content-type'] || 'application/json')
        .split(';')[0]
        .trim();
      const schema = this.responseSchema(method, path, status, mediaType);
      if (schema) {
        transaction.expected.bodySchema = schema;
        delete transaction.expected.body;
      }
    },
  };
}

/** A tiny client for fixtures: `await api('POST', '/api/users', {token, body})` → {status, headers, body}. */
async function api(method, path, { token, body, headers = {} } = {}) {
  if (!SERVER_URL) throw new Error('DREDD_SERVER_URL is not set (run through npm run test:contract)');
  const sent = { ...headers };
  if (body !== undefined) sent['content-type'] = 'application/json';
  if (token) sent.authorization = `Bearer ${token}`;
  const response = await fetch(`${SERVER_URL}${path}`, { method, headers: sent, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  let parsed = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, headers: response.headers, body: parsed };
}

/** Rewrites a transaction's request: path (both places dredd keeps it), bearer token, JSON body. */
function rewrite(transaction, { path, token, body, dropAuth } = {}) {
  if (path !== undefined) {
    transaction.fullPath = path;
    transaction.request.uri = path;
  }
  const headers = transaction.request.headers;
  if (dropAuth || token !== undefined) {
    for (const name of Object.keys(headers)) if (name.toLowerCase() === 'authorization') delete headers[name];
  }
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) {
    transaction.request.body = typeof body === 'string' ? body : JSON.stringify(body);
    for (const name of Object.keys(headers)) if (name.toLowerCase() === 'content-length') delete headers[name];
    headers['Content-Type'] = 'application/json';
  }
}

/** Wraps an async hook body for dredd's callback style; a thrown error fails the transaction. */
function asyncHook(fn) {
  return (transaction, done) => {
    Promise.resolve()
      .then(() => fn(transaction))
      .then(
        () => done(),
        (error) => {
          transaction.fail = `hook failed: ${error && error.stack ? error.stack : error}`;
          done();
        },
      );
  };
}

module.exports = { contract, api, keyOf, rewrite, asyncHook, toJsonSchema, SERVER_URL };
