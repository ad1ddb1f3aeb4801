import { buildSchema } from 'graphql';
import { bumpBetween, bumpSatisfies, makeChangelog, nextVersion, renderMarkdown, requiredBump, type ContractChange, type Severity } from '../../scripts/contracts/changes.js';
import { findGraphqlChanges } from '../../scripts/contracts/graphql-changes.js';
import { findOpenApiChanges } from '../../scripts/contracts/openapi-breaking.js';

// The classification rules of the contracts' changelog, table by table (the CLI runs in changelog.test.ts).

type Json = Record<string, unknown>;

/** GET /things/{id} answering a Thing, and POST /things taking a NewThing. */
function doc(change: (parts: { thing: Json; newThing: Json; get: Json; post: Json; root: Json }) => void = () => undefined): Json {
  const thing: Json = { type: 'object', required: ['id'], properties: { id: { type: 'string' }, state: { type: 'string', enum: ['on', 'off'] } } };
  const newThing: Json = { type: 'object', required: ['name'], properties: { name: { type: 'string', maxLength: 100 } } };
  const get: Json = {
    operationId: 'getThing',
    parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
    responses: { '200': { description: 'The thing.', content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } } },
  };
  const post: Json = {
    operationId: 'createThing',
    requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/NewThing' } } } },
    responses: { '201': { description: 'Created.', content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } } },
  };
  const root: Json = {
    openapi: '3.0.3',
    info: { title: 'Things', version: '1' },
    paths: { '/things/{id}': { get }, '/things': { post } },
    components: { schemas: { Thing: thing, NewThing: newThing } },
  };
  change({ thing, newThing, get, post, root });
  return root;
}

const props = (schema: Json) => schema.properties as Record<string, Json>;

const OPENAPI_CASES: [string, (parts: { thing: Json; newThing: Json; get: Json; post: Json; root: Json }) => void, [Severity, string, string][]][] = [
  ['a response property removed', ({ thing }) => delete props(thing).state, [['breaking', 'GET /things/{id}', 'the property "state" of the 200 response was removed'], ['breaking', 'POST /things', 'the property "state" of the 201 response was removed']]],
  ['an optional request property added', ({ newThing }) => (props(newThing).tag = { type: 'string' }), [['additive', 'POST /things', 'the optional property "tag" of the request body was added']]],
  ['a required request property added', ({ newThing }) => ((props(newThing).tag = { type: 'string' }), (newThing.required = ['name', 'tag'])), [['breaking', 'POST /things', 'the required property "tag" of the request body was added']]],
  ['a request bound loosened', ({ newThing }) => (props(newThing).name!.maxLength = 200), [['additive', 'POST /things', 'the maximum length of the property "name" of the request body changed from 100 to 200']]],
  ['a newly documented error status', ({ get }) => ((get.responses as Json)['404'] = { description: 'No such thing.' }), [['dangerous', 'GET /things/{id}', 'the 404 response is newly documented (No such thing)']]],
  ['an operation added', ({ root }) => ((root.paths as Json)['/other'] = { get: { operationId: 'getOther', responses: { '200': { description: 'ok' } } } }), [['additive', 'GET /other', 'the operation getOther was added']]],
  ['an operationId renamed (generated clients name operations by it)', ({ get }) => (get.operationId = 'readThing'), [['breaking', 'GET /things/{id}', 'the operationId changed from "getThing" to "readThing"']]],
  ['an operation that starts requiring credentials', ({ post }) => (post.security = [{ bearer: [] }]), [['breaking', 'POST /things', 'the operation now requires authentication (bearer)']]],
  ['a response enum value added (clients switch over them)', ({ thing }) => (props(thing).state!.enum = ['on', 'off', 'broken']), [['breaking', 'GET /things/{id}', 'the property "state" of the 200 response may now be "broken"'], ['breaking', 'POST /things', 'the property "state" of the 201 response may now be "broken"']]],
  ['a deprecation', ({ get }) => (get.deprecated = true), [['additive', 'GET /things/{id}', 'the operation is deprecated']]],
  ['a description rewritten', ({ get }) => ((get.responses as Record<string, Json>)['200']!.description = 'The thing, as stored.'), [['documentation', 'GET /things/{id}, the 200 response', 'the description changed']]],
  ['a property description added (where it is written: once)', ({ thing }) => (props(thing).id!.description = 'Its id.'), [['documentation', 'schema Thing, property "id"', 'the description was added']]],
  [
    'OpenAPI links added (documentation-only)',
    ({ post }) => ((post.responses as Record<string, Json>)['201']!.links = { GetThing: { operationId: 'getThing', parameters: { id: '$response.body#/id' } } }),
    [['documentation', 'POST /things, the 201 response', 'the link "GetThing" was added']],
  ],
  ['a property named like a keyword (title) added', ({ thing }) => (props(thing).title = { type: 'string' }), [['additive', 'GET /things/{id}', 'the property "title" of the 200 response was added'], ['additive', 'POST /things', 'the property "title" of the 201 response was added']]],
];

describe('OpenAPI changes', () => {
  it.each(OPENAPI_CASES)('%s', (_name, change, want) => {
    const found = findOpenApiChanges(doc(), doc(change), 'things.yaml').map(({ severity, location, message }) => [severity, location.replace(/^things\.yaml, /, ''), message]);
    expect(found).toEqual(want);
  });

  it('finds nothing between a document and itself', () => {
    expect(findOpenApiChanges(doc(), doc(), 'things.yaml')).toEqual([]);
  });
});

const SCHEMA = `
"The things."
schema { query: Query }
type Query {
  "A thing."
  thing(id: ID!, verbose: Boolean): Thing
}
enum State { on off }
type Thing { id: ID! state: State name: String }
`;

const GRAPHQL_CASES: [string, string, [Severity, string, string][]][] = [
  ['an argument made required', SCHEMA.replace('verbose: Boolean', 'verbose: Boolean!'), [['breaking', 'Query.thing', 'Query.thing arg verbose has changed type from Boolean to Boolean!']]],
  ['a field removed', SCHEMA.replace(' name: String', ''), [['breaking', 'Thing.name', 'Thing.name was removed']]],
  ['an enum value added', SCHEMA.replace('on off', 'on off broken'), [['dangerous', 'State', 'broken was added to enum type State']]],
  ['an optional argument added', SCHEMA.replace('verbose: Boolean)', 'verbose: Boolean, lang: String)'), [['dangerous', 'Query.thing', 'an optional arg lang on Query.thing was added']]],
  ['a field added', SCHEMA.replace('name: String', 'name: String size: Int'), [['additive', 'Thing.size', 'the field size was added']]],
  ['an output made non-null (compatible)', SCHEMA.replace('name: String', 'name: String!'), [['additive', 'Thing.name', 'the type changed from String to String! (compatible)']]],
  ['a field deprecated', SCHEMA.replace('name: String', 'name: String @deprecated(reason: "Use id.")'), [['additive', 'Thing.name', 'is deprecated: Use id.']]],
  ['a description changed', SCHEMA.replace('"A thing."', '"One thing."'), [['documentation', 'Query.thing', 'the description changed']]],
];

describe('GraphQL changes', () => {
  it.each(GRAPHQL_CASES)('%s', (_name, after, want) => {
    expect(findGraphqlChanges(buildSchema(SCHEMA), buildSchema(after)).map(({ severity, subject, change }) => [severity, subject, change])).toEqual(want);
  });
});

describe('versions', () => {
  const change = (severity: Severity): ContractChange => ({ severity, kind: 'openapi', file: 'openapi/x.yaml', api: 'X', subject: 'GET /x', change: 'c', action: 'a' });

  it.each([
    [[], 'none'],
    [['documentation'], 'patch'],
    [['documentation', 'additive'], 'minor'],
    [['dangerous'], 'minor'],
    [['additive', 'breaking', 'documentation'], 'major'],
  ] as [Severity[], string][])('%j requires a %s bump', (severities, bump) => {
    expect(requiredBump(severities.map(change))).toBe(bump);
  });

  it.each([
    ['2.0.0', '2.0.0', 'none'],
    ['2.0.0', '2.0.1', 'patch'],
    ['2.0.0', '2.1.0', 'minor'],
    ['2.0.3', '3.0.0', 'major'],
    ['2.4.1', '3.0.0-rc.1', 'major'],
  ])('%s → %s is a %s bump', (from, to, bump) => {
    expect(bumpBetween(from, to)).toBe(bump);
  });

  it('refuses a version lower than the released one, and a version that is not semantic', () => {
    expect(() => bumpBetween('2.1.0', '2.0.9')).toThrow('version 2.0.9 is lower than the released 2.1.0');
    expect(() => bumpBetween('2.1.0', 'next')).toThrow('"next" is not a semantic version');
  });

  it('a larger bump satisfies a smaller requirement, never the reverse; the next version is the least that would do', () => {
    expect(bumpSatisfies('major', 'minor')).toBe(true);
    expect(bumpSatisfies('minor', 'major')).toBe(false);
    expect(bumpSatisfies('none', 'patch')).toBe(false);
    expect([nextVersion('2.3.4', 'major'), nextVersion('2.3.4', 'minor'), nextVersion('2.3.4', 'patch'), nextVersion('2.3.4', 'none')]).toEqual(['3.0.0', '2.4.0', '2.3.5', '2.3.4']);
  });

  it('renders an empty changelog as a marked block saying so', () => {
    expect(renderMarkdown(makeChangelog({ label: 'a', version: '1.0.0' }, { label: 'b' }, []))).toBe(
      '<!-- contracts:changelog -->\n<!-- from a (1.0.0) to b; required version bump: none -->\n\nNo contract changes.\n\n<!-- /contracts:changelog -->\n',
    );
  });
});
