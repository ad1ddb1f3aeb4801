import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildSchema } from 'graphql';
import { parse } from 'yaml';
import { startServer, type TestServer } from '../support/app.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const openapiFiles = readdirSync(join(ROOT, 'contracts/openapi')).filter((file) => file.endsWith('.yaml')).sort();
const graphqlFiles = readdirSync(join(ROOT, 'contracts/graphql')).filter((file) => file.endsWith('.graphql')).sort();

describe('the server serves its contracts', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server?.close());

  it('lists every OpenAPI document at /openapi', async () => {
    const response = await server.request('GET', '/openapi', { unchecked: true });
    expect(response.status).toBe(200);
    expect(response.body.documents.map((document: { name: string }) => `${document.name}.yaml`)).toEqual(openapiFiles);
    for (const document of response.body.documents) {
      expect(document).toEqual({ name: expect.any(String), title: expect.any(String), version: expect.any(String), yaml: `/openapi/${document.name}.yaml`, json: `/openapi/${document.name}.json` });
    }
  });

  it.each(openapiFiles)('serves %s as YAML and as JSON', async (file) => {
    const name = file.replace(/\.yaml$/, '');
    const source = readFileSync(join(ROOT, 'contracts/openapi', file), 'utf8');
    const yaml = await server.request('GET', `/openapi/${name}.yaml`, { unchecked: true });
    expect(yaml.status).toBe(200);
    expect(yaml.headers.get('content-type')).toBe('application/yaml; charset=utf-8');
    expect(yaml.text).toBe(source);
    const json = await server.request('GET', `/openapi/${name}.json`, { unchecked: true });
    expect(json.status).toBe(200);
    expect(json.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(json.body).toEqual(parse(source));
  });

  it('serves the GraphQL SDL at /graphql/schema.graphql and by file name', async () => {
    const first = graphqlFiles[0] ?? '';
    const source = readFileSync(join(ROOT, 'contracts/graphql', first), 'utf8');
    for (const path of ['/graphql/schema.graphql', `/graphql/${first}`]) {
      const response = await server.request('GET', path, { unchecked: true });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(response.text).toBe(source);
      expect(() => buildSchema(response.text)).not.toThrow();
    }
  });

  it('leaves GET /graphql to the GraphQL endpoint', async () => {
    const response = await server.request('GET', '/graphql?query=%7B__typename%7D', { unchecked: true });
    expect(response.status).not.toBe(404);
    expect(response.body).toHaveProperty('errors');
  });

  it('serves the API reference page with a strict CSP and only same-origin assets', async () => {
    const page = await server.request('GET', '/docs', { unchecked: true });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
    expect(page.text).not.toMatch(/<script>|style="/);
    const assets = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1] ?? '');
    expect(assets).toEqual(expect.arrayContaining(['/docs/assets/swagger-ui-bundle.js', '/docs/assets/swagger-ui.css', '/docs/assets/docs.js']));
    for (const asset of assets) {
      expect(asset.startsWith('/')).toBe(true);
      const response = await server.request('GET', asset, { unchecked: true });
      expect([asset, response.status]).toEqual([asset, 200]);
    }
    const script = await server.request('GET', '/docs/assets/docs.js', { unchecked: true });
    for (const file of openapiFiles) expect(script.text).toContain(`/openapi/${file.replace(/\.yaml$/, '')}.json`);
  });

  it('answers 304 to a request that already has the current version', async () => {
    const first = await server.request('GET', '/openapi/users.yaml', { unchecked: true });
    const etag = first.headers.get('etag') ?? '';
    expect(etag).toMatch(/^".+"$/);
    const again = await server.request('GET', '/openapi/users.yaml', { unchecked: true, headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
  });

  it('answers 404 for an unknown document and 405 for a write', async () => {
    expect((await server.request('GET', '/openapi/nope.yaml', { unchecked: true })).status).toBe(404);
    const write = await server.request('POST', '/openapi/users.yaml', { unchecked: true, body: {} });
    expect(write.status).toBe(405);
    expect(write.headers.get('allow')).toBe('GET, HEAD');
  });
});
