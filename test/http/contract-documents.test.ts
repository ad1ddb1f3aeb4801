import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { loadContractDocument, loadContractDocuments, sha256 } from '../../src/http/contract-documents.js';
import { ROOT } from '../support/template.js';

/**
 * Start-up (issue 11 item 1): each OpenAPI document is read once per process, and the built server
 * takes the JSON the build wrote for it (no YAML parse, no meta-schema compile) while the YAML still
 * hashes to what was built; otherwise the YAML is parsed and validated, as in dev and tests. The
 * build's side is tested on a real build in test/runtime/startup.test.ts.
 */
const USERS = join(ROOT, 'contracts/openapi/users.yaml');
const INVALID = 'openapi: 3.0.3\ninfo:\n  title: no version\npaths: {}\n';
let scratch: string;

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'contract-documents-'));
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A directory of pre-built documents laid out as `npm run build` writes them (`<name>.json`). */
function prebuiltDir(name: string, entries: Record<string, { sha256: string; document: unknown }>): string {
  const dir = join(scratch, name);
  mkdirSync(dir, { recursive: true });
  for (const [file, entry] of Object.entries(entries)) writeFileSync(join(dir, `${file}.json`), JSON.stringify(entry));
  return dir;
}

test('without a build, each document is parsed from YAML once per process and shared', () => {
  const none = { prebuiltDir: join(scratch, 'none') };
  const first = loadContractDocument(USERS, none);
  expect(first).toMatchObject({ name: 'users', source: 'yaml', text: readFileSync(USERS, 'utf8') });
  expect(first.document).toEqual(parseYaml(readFileSync(USERS, 'utf8')));
  // The REST engine names it `${ROOT}contracts/…`, the contracts module join(ROOT, …): one document.
  expect(loadContractDocument(`${ROOT}contracts/openapi/../openapi/users.yaml`, none)).toBe(first);
  expect(loadContractDocuments(none).map((loaded) => loaded.name)).toEqual(['publishing', 'users', 'webhooks']);
  expect(loadContractDocuments(none)[1]).toBe(first);
});

test('when the YAML hashes to what the build recorded, the pre-built JSON is the document', () => {
  const text = readFileSync(USERS, 'utf8');
  // A marker only the JSON carries shows which of the two was read.
  const document = { ...(parseYaml(text) as object), 'x-prebuilt': true };
  const loaded = loadContractDocument(USERS, { prebuiltDir: prebuiltDir('matching', { users: { sha256: sha256(text), document } }) });
  expect(loaded.source).toBe('prebuilt');
  expect(loaded.document).toEqual(document);
  expect(loaded.text).toBe(text);
});

test('when the YAML changed after the build, the YAML is parsed instead of the stale JSON', () => {
  const loaded = loadContractDocument(USERS, {
    prebuiltDir: prebuiltDir('stale', { users: { sha256: sha256('an older contract'), document: { stale: true } } }),
  });
  expect(loaded.source).toBe('yaml');
  expect(loaded.document).toEqual(parseYaml(readFileSync(USERS, 'utf8')));
});

test('an invalid document that the build did not vouch for refuses the start, with or without a build', () => {
  const path = join(scratch, 'broken.yaml');
  writeFileSync(path, INVALID);
  expect(() => loadContractDocument(path, { prebuiltDir: join(scratch, 'none') })).toThrow(/broken\.yaml is not valid OpenAPI.*version/s);
  const stale = prebuiltDir('broken-stale', {
    broken: { sha256: sha256('the text that was built'), document: { openapi: '3.0.3', info: { title: 't', version: '1' }, paths: {} } },
  });
  expect(() => loadContractDocument(path, { prebuiltDir: stale })).toThrow(/is not valid OpenAPI/);
});
