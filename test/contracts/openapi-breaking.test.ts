import { describeBreak, findOpenApiBreaks } from '../../scripts/contracts/openapi-breaking.js';

type Json = Record<string, unknown>;

/** A one-operation document: POST /things with a JSON request body and a 200 JSON response. */
function doc(
  options: { request?: Json; response?: Json; parameters?: Json[]; requestBody?: Json | null; responses?: Json; paths?: Json; components?: Json } = {},
): Json {
  const requestBody =
    options.requestBody === null
      ? undefined
      : (options.requestBody ?? {
          required: true,
          content: { 'application/json': { schema: options.request ?? { type: 'object', properties: { name: { type: 'string' } } } } },
        });
  return {
    openapi: '3.0.3',
    info: { title: 't', version: '1' },
    paths: {
      '/things/{thingId}': {
        post: {
          operationId: 'createThing',
          parameters: [{ name: 'thingId', in: 'path', required: true, schema: { type: 'string' } }, ...(options.parameters ?? [])],
          ...(requestBody ? { requestBody } : {}),
          responses: options.responses ?? {
            '200': {
              description: 'ok',
              content: {
                'application/json': {
                  schema: options.response ?? { type: 'object', required: ['id'], properties: { id: { type: 'string' }, size: { type: 'integer' } } },
                },
              },
            },
          },
        },
      },
      ...(options.paths ?? {}),
    },
    components: options.components ?? {},
  };
}

const obj = (properties: Json, extra: Json = {}): Json => ({ type: 'object', properties, ...extra });
const where = 'api.yaml, POST /things/{thingId}';

const breaking: Array<[string, { given: [Json, Json]; want: string[] }]> = [
  [
    'a removed path',
    {
      given: [doc({ paths: { '/other': { get: { responses: { '200': { description: 'ok' } } } } } }), doc()],
      want: ['api.yaml: the path /other was removed.'],
    },
  ],
  [
    'a removed operation',
    {
      given: [doc({ paths: { '/other': { get: { responses: {} }, put: { responses: {} } } } }), doc({ paths: { '/other': { get: { responses: {} } } } })],
      want: ['api.yaml, PUT /other: the operation was removed.'],
    },
  ],
  [
    'a response status no longer documented',
    {
      given: [doc({ responses: { '200': { description: 'ok' }, '404': { description: 'gone' } } }), doc({ responses: { '200': { description: 'ok' } } })],
      want: [`${where}: the 404 response is no longer documented.`],
    },
  ],
  [
    'a removed response property',
    {
      given: [doc(), doc({ response: obj({ id: { type: 'string' } }, { required: ['id'] }) })],
      want: [`${where}: the property "size" of the 200 response was removed.`],
    },
  ],
  [
    'a response property that is no longer required',
    {
      given: [doc(), doc({ response: obj({ id: { type: 'string' }, size: { type: 'integer' } }) })],
      want: [`${where}: the property "id" of the 200 response is no longer required (it may be absent).`],
    },
  ],
  [
    'a removed nested response property',
    {
      given: [
        doc({ response: obj({ owner: obj({ name: { type: 'string' }, email: { type: 'string' } }) }) }),
        doc({ response: obj({ owner: obj({ name: { type: 'string' } }) }) }),
      ],
      want: [`${where}: the property "owner.email" of the 200 response was removed.`],
    },
  ],
  [
    'a removed property inside array items of a response',
    {
      given: [
        doc({ response: obj({ items: { type: 'array', items: obj({ id: { type: 'string' }, tag: { type: 'string' } }) } }) }),
        doc({ response: obj({ items: { type: 'array', items: obj({ id: { type: 'string' } }) } }) }),
      ],
      want: [`${where}: the property "items[].tag" of the 200 response was removed.`],
    },
  ],
  [
    'a request property that becomes required',
    {
      given: [doc(), doc({ request: obj({ name: { type: 'string' } }, { required: ['name'] }) })],
      want: [`${where}: the property "name" of the request body became required.`],
    },
  ],
  [
    'a required request property that is added',
    {
      given: [doc(), doc({ request: obj({ name: { type: 'string' }, kind: { type: 'string' } }, { required: ['kind'] }) })],
      want: [`${where}: the required property "kind" of the request body was added.`],
    },
  ],
  [
    'a query parameter that becomes required',
    {
      given: [
        doc({ parameters: [{ name: 'q', in: 'query', schema: { type: 'string' } }] }),
        doc({ parameters: [{ name: 'q', in: 'query', required: true, schema: { type: 'string' } }] }),
      ],
      want: [`${where}: the query parameter "q" became required.`],
    },
  ],
  [
    'a required header parameter that is added',
    {
      given: [doc(), doc({ parameters: [{ name: 'X-Tenant', in: 'header', required: true, schema: { type: 'string' } }] })],
      want: [`${where}: the required header parameter "X-Tenant" was added.`],
    },
  ],
  [
    'a removed query parameter',
    { given: [doc({ parameters: [{ name: 'q', in: 'query', schema: { type: 'string' } }] }), doc()], want: [`${where}: the query parameter "q" was removed.`] },
  ],
  [
    'a request body that becomes required',
    {
      given: [
        doc({ requestBody: { content: { 'application/json': { schema: obj({}) } } } }),
        doc({ requestBody: { required: true, content: { 'application/json': { schema: obj({}) } } } }),
      ],
      want: [`${where}: the request body became required.`],
    },
  ],
  [
    'a required request body that is added',
    {
      given: [doc({ requestBody: null }), doc({ requestBody: { required: true, content: { 'application/json': { schema: obj({}) } } } })],
      want: [`${where}: a required request body was added.`],
    },
  ],
  ['a removed request body', { given: [doc(), doc({ requestBody: null })], want: [`${where}: the request body was removed.`] }],
  [
    'a request content type that is no longer accepted',
    {
      given: [
        doc({ requestBody: { content: { 'application/json': { schema: obj({}) }, 'text/plain': { schema: { type: 'string' } } } } }),
        doc({ requestBody: { content: { 'application/json': { schema: obj({}) } } } }),
      ],
      want: [`${where}: the request content type text/plain is no longer accepted.`],
    },
  ],
  [
    'a response content type that is removed',
    {
      given: [
        doc({ responses: { '200': { description: 'ok', content: { 'application/json': { schema: obj({}) }, 'text/csv': { schema: { type: 'string' } } } } } }),
        doc({ responses: { '200': { description: 'ok', content: { 'application/json': { schema: obj({}) } } } } }),
      ],
      want: [`${where}: the 200 response no longer has the content type text/csv.`],
    },
  ],
  [
    'a removed response header',
    {
      given: [
        doc({ responses: { '200': { description: 'ok', headers: { ETag: { schema: { type: 'string' } } } } } }),
        doc({ responses: { '200': { description: 'ok' } } }),
      ],
      want: [`${where}: the 200 response header "ETag" was removed.`],
    },
  ],
  [
    'a request type narrowed from number to integer',
    {
      given: [doc({ request: obj({ n: { type: 'number' } }) }), doc({ request: obj({ n: { type: 'integer' } }) })],
      want: [`${where}: the type of the property "n" of the request body changed from number to integer.`],
    },
  ],
  [
    'a request type changed',
    {
      given: [doc({ request: obj({ n: { type: 'string' } }) }), doc({ request: obj({ n: { type: 'boolean' } }) })],
      want: [`${where}: the type of the property "n" of the request body changed from string to boolean.`],
    },
  ],
  [
    'a response type widened from integer to number',
    {
      given: [doc(), doc({ response: obj({ id: { type: 'string' }, size: { type: 'number' } }, { required: ['id'] }) })],
      want: [`${where}: the type of the property "size" of the 200 response changed from integer to number.`],
    },
  ],
  [
    'an enum added on a formerly free request string',
    {
      given: [doc(), doc({ request: obj({ name: { type: 'string', enum: ['a', 'b'] } }) })],
      want: [`${where}: the property "name" of the request body is now restricted to "a", "b".`],
    },
  ],
  [
    'a value removed from a request enum',
    {
      given: [doc({ request: obj({ name: { type: 'string', enum: ['a', 'b'] } }) }), doc({ request: obj({ name: { type: 'string', enum: ['a'] } }) })],
      want: [`${where}: the property "name" of the request body no longer accepts "b".`],
    },
  ],
  [
    'a value added to a response enum',
    {
      given: [doc({ response: obj({ state: { type: 'string', enum: ['on'] } }) }), doc({ response: obj({ state: { type: 'string', enum: ['on', 'off'] } }) })],
      want: [`${where}: the property "state" of the 200 response may now be "off".`],
    },
  ],
  [
    'a lowered maxLength',
    {
      given: [doc({ request: obj({ name: { type: 'string', maxLength: 100 } }) }), doc({ request: obj({ name: { type: 'string', maxLength: 50 } }) })],
      want: [`${where}: the maximum length of the property "name" of the request body was lowered from 100 to 50.`],
    },
  ],
  [
    'an added maxLength',
    {
      given: [doc(), doc({ request: obj({ name: { type: 'string', maxLength: 50 } }) })],
      want: [`${where}: the property "name" of the request body now has a maximum length of 50.`],
    },
  ],
  [
    'a raised minLength',
    {
      given: [doc({ request: obj({ name: { type: 'string', minLength: 1 } }) }), doc({ request: obj({ name: { type: 'string', minLength: 3 } }) })],
      want: [`${where}: the minimum length of the property "name" of the request body was raised from 1 to 3.`],
    },
  ],
  [
    'a raised minimum',
    {
      given: [
        doc({ parameters: [{ name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1 } }] }),
        doc({ parameters: [{ name: 'limit', in: 'query', schema: { type: 'integer', minimum: 5 } }] }),
      ],
      want: [`${where}: the minimum of the query parameter "limit" was raised from 1 to 5.`],
    },
  ],
  [
    'a lowered maximum',
    {
      given: [
        doc({ parameters: [{ name: 'limit', in: 'query', schema: { type: 'integer', maximum: 100 } }] }),
        doc({ parameters: [{ name: 'limit', in: 'query', schema: { type: 'integer', maximum: 10 } }] }),
      ],
      want: [`${where}: the maximum of the query parameter "limit" was lowered from 100 to 10.`],
    },
  ],
  [
    'a request pattern added',
    {
      given: [doc(), doc({ request: obj({ name: { type: 'string', pattern: '^[a-z]+$' } }) })],
      want: [`${where}: the property "name" of the request body now requires the pattern "^[a-z]+$".`],
    },
  ],
  [
    'a request body that stops accepting additional properties',
    {
      given: [doc(), doc({ request: obj({ name: { type: 'string' } }, { additionalProperties: false }) })],
      want: [`${where}: the request body no longer accepts additional properties.`],
    },
  ],
  [
    'a request property removed under additionalProperties false',
    {
      given: [
        doc({ request: obj({ name: { type: 'string' }, note: { type: 'string' } }, { additionalProperties: false }) }),
        doc({ request: obj({ name: { type: 'string' } }, { additionalProperties: false }) }),
      ],
      want: [`${where}: the property "note" of the request body was removed and is now rejected.`],
    },
  ],
  [
    'a request property that no longer accepts null',
    {
      given: [doc({ request: obj({ name: { type: 'string', nullable: true } }) }), doc()],
      want: [`${where}: the property "name" of the request body no longer accepts null.`],
    },
  ],
  [
    'a response property that may now be null',
    {
      given: [doc(), doc({ response: obj({ id: { type: 'string', nullable: true }, size: { type: 'integer' } }, { required: ['id'] }) })],
      want: [`${where}: the property "id" of the 200 response may now be null.`],
    },
  ],
  [
    'a change inside a $ref schema, reported where it is used',
    {
      given: [
        doc({
          response: { $ref: '#/components/schemas/Thing' },
          components: { schemas: { Thing: obj({ id: { type: 'string' }, size: { type: 'integer' } }) } },
        }),
        doc({ response: { $ref: '#/components/schemas/Thing' }, components: { schemas: { Thing: obj({ id: { type: 'string' } }) } } }),
      ],
      want: [`${where}: the property "size" of the 200 response was removed.`],
    },
  ],
  [
    'a property removed from an allOf part',
    {
      given: [
        doc({ response: { allOf: [obj({ id: { type: 'string' } }), obj({ size: { type: 'integer' } })] } }),
        doc({ response: { allOf: [obj({ id: { type: 'string' } })] } }),
      ],
      want: [`${where}: the property "size" of the 200 response was removed.`],
    },
  ],
];

const additive: Array<[string, { given: [Json, Json] }]> = [
  ['a new optional request property', { given: [doc(), doc({ request: obj({ name: { type: 'string' }, note: { type: 'string' } }) })] }],
  ['a new path', { given: [doc(), doc({ paths: { '/new': { get: { responses: { '200': { description: 'ok' } } } } } })] }],
  ['a new optional query parameter', { given: [doc(), doc({ parameters: [{ name: 'q', in: 'query', schema: { type: 'string' } }] })] }],
  [
    'a new response code',
    { given: [doc({ responses: { '200': { description: 'ok' } } }), doc({ responses: { '200': { description: 'ok' }, '409': { description: 'conflict' } } })] },
  ],
  [
    'a new response property',
    { given: [doc(), doc({ response: obj({ id: { type: 'string' }, size: { type: 'integer' }, extra: { type: 'string' } }, { required: ['id'] }) })] },
  ],
  ['a renamed path parameter', { given: [doc(), JSON.parse(JSON.stringify(doc()).replaceAll('thingId', 'id')) as Json] }],
  [
    'a request maxLength raised and minLength lowered',
    {
      given: [
        doc({ request: obj({ name: { type: 'string', minLength: 3, maxLength: 10 } }) }),
        doc({ request: obj({ name: { type: 'string', minLength: 1, maxLength: 20 } }) }),
      ],
    },
  ],
  [
    'a request enum value added',
    { given: [doc({ request: obj({ name: { type: 'string', enum: ['a'] } }) }), doc({ request: obj({ name: { type: 'string', enum: ['a', 'b'] } }) })] },
  ],
  ['a request integer widened to number', { given: [doc({ request: obj({ n: { type: 'integer' } }) }), doc({ request: obj({ n: { type: 'number' } }) })] }],
  [
    'a response property that becomes required',
    { given: [doc(), doc({ response: obj({ id: { type: 'string' }, size: { type: 'integer' } }, { required: ['id', 'size'] }) })] },
  ],
  ['a request property that becomes optional', { given: [doc({ request: obj({ name: { type: 'string' } }, { required: ['name'] }) }), doc()] }],
  [
    'a required readOnly property added to a shared schema',
    { given: [doc(), doc({ request: obj({ name: { type: 'string' }, id: { type: 'string', readOnly: true } }, { required: ['id'] }) })] },
  ],
  [
    'an unchanged recursive schema',
    {
      given: [
        doc({
          response: { $ref: '#/components/schemas/Node' },
          components: { schemas: { Node: obj({ children: { type: 'array', items: { $ref: '#/components/schemas/Node' } } }) } },
        }),
        doc({
          response: { $ref: '#/components/schemas/Node' },
          components: { schemas: { Node: obj({ children: { type: 'array', items: { $ref: '#/components/schemas/Node' } } }) } },
        }),
      ],
    },
  ],
];

describe('OpenAPI breaking-change rules', () => {
  it.each(breaking)('reports %s', (_name, { given, want }) => {
    expect(findOpenApiBreaks(given[0], given[1], 'api.yaml').map(describeBreak)).toEqual(want);
  });

  it.each(additive)('lets %s pass', (_name, { given }) => {
    expect(findOpenApiBreaks(given[0], given[1], 'api.yaml').map(describeBreak)).toEqual([]);
  });

  it('finds no break between a document and itself', () => {
    const document = doc({ parameters: [{ name: 'q', in: 'query', required: true, schema: { type: 'string', enum: ['x'] } }] });
    expect(findOpenApiBreaks(document, structuredClone(document))).toEqual([]);
  });
});
