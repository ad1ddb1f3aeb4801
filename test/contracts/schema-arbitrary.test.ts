import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { parse as parseYaml } from 'yaml';
import { invalidValue, resolveRefs, validValue, type Schema } from '../contract/schema-arbitrary.js';

const ROOT = new URL('../../', import.meta.url).pathname;

/** Every JSON request body schema of every contract, as `[contract operationId, schema]`. */
function requestBodySchemas(): Array<[string, Schema]> {
  const found: Array<[string, Schema]> = [];
  for (const file of readdirSync(join(ROOT, 'contracts/openapi')).filter((name) => name.endsWith('.yaml'))) {
    const raw = parseYaml(readFileSync(join(ROOT, 'contracts/openapi', file), 'utf8')) as unknown;
    const document = resolveRefs(raw, raw) as { paths: Record<string, Record<string, { operationId?: string; requestBody?: { content?: Record<string, { schema?: Schema }> } }>> };
    for (const item of Object.values(document.paths)) {
      for (const operation of Object.values(item)) {
        const schema = operation?.requestBody?.content?.['application/json']?.schema;
        if (schema) found.push([`${file} ${operation.operationId}`, schema]);
      }
    }
  }
  return found;
}

function validator(schema: Schema): (value: unknown) => boolean {
  const ajv = new Ajv({ strict: false, allErrors: false });
  addFormats.default(ajv);
  const validate = ajv.compile(schema);
  return (value) => validate(value) === true;
}

const cases = requestBodySchemas();

test('the contracts have JSON request bodies to generate', () => {
  expect(cases.length).toBeGreaterThanOrEqual(5);
});

describe.each(cases)('%s', (_name, schema) => {
  test('every generated valid value passes the schema', () => {
    const validate = validator(schema);
    fc.assert(fc.property(validValue(schema), (value) => validate(value)), { numRuns: 60, seed: 1 });
  });

  test('most generated invalid values fail the schema', () => {
    const validate = validator(schema);
    const values = fc.sample(invalidValue(schema), { numRuns: 100, seed: 1 });
    const rejected = values.filter((value) => !validate(value)).length;
    expect(rejected).toBeGreaterThanOrEqual(80);
  });
});
