import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

// Swagger UI, Postman and code generators take `servers` at its word: an absolute URL written in
// the contract (it was http://localhost:8080) sends them to the wrong host. A relative server
// resolves against wherever the document was fetched from (issue 19 §4).

const ROOT = new URL('../../', import.meta.url).pathname;
const files = readdirSync(join(ROOT, 'contracts/openapi')).filter((file) => file.endsWith('.yaml'));

test.each(files)('%s names only relative servers', (file) => {
  const document = parse(readFileSync(join(ROOT, 'contracts/openapi', file), 'utf8')) as { servers?: { url: string }[] };
  // Only the URL matters here (the entry also carries `x-internal: false` for the OWASP lint).
  expect(document.servers?.map((server) => server.url)).toEqual(['/']);
  expect(new URL(document.servers![0]!.url, 'https://api.example.test/openapi/x.yaml').origin).toBe('https://api.example.test');
});
