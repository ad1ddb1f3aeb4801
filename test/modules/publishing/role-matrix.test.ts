import { startServer, type TestServer } from '../../support/app.js';
import { createActors, EVERYONE, SUPERUSER, tokenOf, type Actors, type Who } from './support.js';

/**
 * The whole role × endpoint matrix of the Article Publishing API: every operation, as each kind of
 * caller, against a fresh fixture per cell. Every response is checked against publishing.yaml.
 */
let server: TestServer;
let actors: Actors;
let topicId: string;
let unique = 0;

beforeAll(async () => {
  server = await startServer({ SUPERUSER_EMAIL: SUPERUSER.email, SUPERUSER_PASSWORD: SUPERUSER.password });
  actors = await createActors(server);
  const topic = await server.request('POST', '/v1/topics', { token: actors.tokens.superuser, body: { title: 'Matrix' } });
  topicId = topic.body._id;
});
afterAll(() => server?.close());

async function writersDraft(): Promise<string> {
  const created = await server.request('POST', '/v1/articles', { token: actors.tokens.writer, body: { title: 'Draft', text: 'Body', topic: topicId } });
  return created.body._id;
}

async function writersPublished(): Promise<string> {
  const id = await writersDraft();
  await server.request('POST', `/v1/articles/${id}/publish`, { token: actors.tokens.editor });
  return id;
}

interface Cell {
  method: string;
  path: string;
  body?: unknown;
}

type Row = [string, { given: () => Promise<Cell>; want: Record<Who, number> }];

const all = (status: number): Record<Who, number> => ({
  anonymous: status,
  reader: status,
  writer: status,
  otherWriter: status,
  editor: status,
  superuser: status,
});
const article = { title: 'Title', text: 'Text', tags: ['t'] };

const rows: Row[] = [
  ['GET /v1/articles', { given: async () => ({ method: 'GET', path: '/v1/articles' }), want: all(200) }],
  [
    'GET /v1/articles?status=draft',
    {
      given: async () => ({ method: 'GET', path: '/v1/articles?status=draft' }),
      want: { anonymous: 401, reader: 403, writer: 200, otherWriter: 200, editor: 200, superuser: 200 },
    },
  ],
  ['GET /v1/articles/{published}', { given: async () => ({ method: 'GET', path: `/v1/articles/${await writersPublished()}` }), want: all(200) }],
  [
    'GET /v1/articles/{draft}',
    {
      given: async () => ({ method: 'GET', path: `/v1/articles/${await writersDraft()}` }),
      want: { anonymous: 404, reader: 404, writer: 200, otherWriter: 404, editor: 200, superuser: 200 },
    },
  ],
  [
    'POST /v1/articles',
    {
      given: async () => ({ method: 'POST', path: '/v1/articles', body: article }),
      want: { anonymous: 401, reader: 403, writer: 201, otherWriter: 201, editor: 201, superuser: 201 },
    },
  ],
  [
    'PUT /v1/articles/{draft}',
    {
      given: async () => ({ method: 'PUT', path: `/v1/articles/${await writersDraft()}`, body: article }),
      want: { anonymous: 401, reader: 403, writer: 200, otherWriter: 404, editor: 200, superuser: 200 },
    },
  ],
  [
    'PUT /v1/articles/{published}',
    {
      given: async () => ({ method: 'PUT', path: `/v1/articles/${await writersPublished()}`, body: article }),
      want: { anonymous: 401, reader: 403, writer: 200, otherWriter: 403, editor: 200, superuser: 200 },
    },
  ],
  [
    'DELETE /v1/articles/{draft}',
    {
      given: async () => ({ method: 'DELETE', path: `/v1/articles/${await writersDraft()}` }),
      want: { anonymous: 401, reader: 403, writer: 204, otherWriter: 404, editor: 403, superuser: 204 },
    },
  ],
  [
    'DELETE /v1/articles/{published}',
    {
      given: async () => ({ method: 'DELETE', path: `/v1/articles/${await writersPublished()}` }),
      want: { anonymous: 401, reader: 403, writer: 204, otherWriter: 403, editor: 403, superuser: 204 },
    },
  ],
  [
    'POST /v1/articles/{draft}/publish',
    {
      given: async () => ({ method: 'POST', path: `/v1/articles/${await writersDraft()}/publish` }),
      want: { anonymous: 401, reader: 403, writer: 403, otherWriter: 403, editor: 200, superuser: 200 },
    },
  ],
  [
    'POST /v1/writers',
    {
      given: async () => ({ method: 'POST', path: '/v1/writers', body: { email: `new${++unique}@example.com`, password: 'password-123', name: 'New' } }),
      want: { anonymous: 401, reader: 403, writer: 403, otherWriter: 403, editor: 403, superuser: 201 },
    },
  ],
  ['GET /v1/writers', { given: async () => ({ method: 'GET', path: '/v1/writers' }), want: all(200) }],
  ['GET /v1/writers/{writer}', { given: async () => ({ method: 'GET', path: `/v1/writers/${actors.ids.writer}` }), want: all(200) }],
  [
    'GET /v1/writers/{reader}',
    {
      given: async () => ({ method: 'GET', path: `/v1/writers/${actors.ids.reader}` }),
      want: { anonymous: 404, reader: 200, writer: 404, otherWriter: 404, editor: 404, superuser: 200 },
    },
  ],
  [
    'POST /v1/writers/login',
    { given: async () => ({ method: 'POST', path: '/v1/writers/login', body: { email: 'writer@example.com', password: 'password-123' } }), want: all(200) },
  ],
  ['GET /v1/topics', { given: async () => ({ method: 'GET', path: '/v1/topics' }), want: all(200) }],
  [
    'POST /v1/topics',
    {
      given: async () => ({ method: 'POST', path: '/v1/topics', body: { title: `Topic ${++unique}` } }),
      want: { anonymous: 401, reader: 403, writer: 403, otherWriter: 403, editor: 403, superuser: 201 },
    },
  ],
];

describe.each(rows)('%s', (_name, { given, want }) => {
  test.each(EVERYONE)('as %s, it answers as the role table says', async (who) => {
    const cell = await given();
    const response = await server.request(cell.method, cell.path, { token: tokenOf(actors, who), body: cell.body });
    expect({ who, status: response.status }).toEqual({ who, status: want[who] });
    expect(response.headers.get('deprecation')).toBe('true');
    expect(response.headers.get('link')).toBe('</docs/publishing.md>; rel="deprecation"');
  });
});

test.each(EVERYONE.filter((who) => who !== 'anonymous'))('the x-access-token header works like the bearer header (%s)', async (who) => {
  const response = await server.request('GET', '/v1/articles?status=draft', { headers: { 'x-access-token': tokenOf(actors, who) ?? '' } });
  expect(response.status).toBe(who === 'reader' ? 403 : 200);
});
