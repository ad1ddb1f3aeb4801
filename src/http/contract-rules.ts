import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { Violation } from '../errors.js';
import { ROOT } from '../server/paths.js';
import { loadContractDocument } from './contract-documents.js';

/**
 * How every contract schema is checked, by the REST engine's validators (`createRestApi`) and by
 * the checks below alike: every error reported (a client fixes them all at once), OpenAPI's own
 * keywords (`example`, `nullable`, `writeOnly`) tolerated, and ajv-formats' formats.
 */
export const CONTRACT_AJV_OPTIONS: Options = { allErrors: true, strict: false };

/** Adds the formats the contracts use (email, uri, uuid, date-time, int32…) to an ajv instance. */
export function withContractFormats(ajv: Ajv): Ajv {
  addFormats.default(ajv);
  return ajv;
}

/**
 * At most this many violations are answered, each field name at most this long: ajv reports every
 * unknown property, so without a bound a body of a million of them would be echoed back whole. The
 * error schemas of the contracts promise these bounds (`maxItems`, `maxLength`; docs/contracts.md).
 */
const MAX_VIOLATIONS = 100;
const MAX_FIELD_LENGTH = 1024;

/**
 * Turns ajv's errors into `{field, message}` entries that name the property (dotted, the request part
 * dropped), the one wording of a contract violation whichever path (REST, GraphQL, a service) found it.
 */
export function violationsOf(errors: ErrorObject[], prefix = ''): Violation[] {
  return errors.slice(0, MAX_VIOLATIONS).map((error) => {
    const base = error.instancePath.replace(/^\//, '').replace(/\//g, '.');
    const missing = error.keyword === 'required' ? String((error.params as { missingProperty?: string }).missingProperty ?? '') : '';
    const extra = error.keyword === 'additionalProperties' ? String((error.params as { additionalProperty?: string }).additionalProperty ?? '') : '';
    const leaf = missing || extra;
    const field = [prefix, base.replace(/^requestBody\.?/, '').replace(/^(path|query|header)\.?/, ''), leaf].filter(Boolean).join('.');
    const message = extra ? 'is not a known property' : (error.message ?? 'is invalid');
    // A missing body is ajv's `required: requestBody`; clients know it as the body.
    return { field: field === '' || field === 'requestBody' ? 'body' : field.slice(0, MAX_FIELD_LENGTH), message };
  });
}

/** The OpenAPI documents of `contracts/openapi`, by file name. */
export type ContractName = 'users' | 'publishing' | 'webhooks';

/** The violations of one value against one contract schema; empty when the value keeps the contract. */
export type ContractCheck = (value: unknown) => Violation[];

/** One ajv for every contract check of the process, each document added once under `contract:<name>`. */
let shared: Ajv | undefined;
const added = new Set<ContractName>();

function ajvWith(contract: ContractName): Ajv {
  shared ??= withContractFormats(new Ajv(CONTRACT_AJV_OPTIONS));
  if (!added.has(contract)) {
    shared.addSchema(loadContractDocument(`${ROOT}contracts/openapi/${contract}.yaml`).document as object, `contract:${contract}`);
    added.add(contract);
  }
  return shared;
}

/**
 * The contract's own rule for one schema of `components/schemas`, compiled from the OpenAPI document
 * (`'CreateRouteRequest'`, or one property: `'CreateUserDto/properties/password'`), so a service that
 * is reached without the REST engine's validation (GraphQL, the inspector page, start-up settings)
 * applies the very bounds the contract states, with the REST path's wording, instead of a copy of
 * them. A property's violations are named after it (`password`). Compiled on first use.
 */
export function contractCheck(contract: ContractName, schema: string): ContractCheck {
  const segments = schema.split('/');
  const prefix = segments.filter((_, index) => index > 0 && segments[index - 1] === 'properties').join('.');
  let validate: ValidateFunction | undefined;
  return (value) => {
    validate ??= ajvWith(contract).compile({ $ref: `contract:${contract}#/components/schemas/${schema}` });
    return validate(value) ? [] : violationsOf(validate.errors ?? [], prefix);
  };
}

/** JSON pointer escaping of one path segment (RFC 6901). */
function pointerSegment(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

interface ParameterEntry {
  name?: string;
  in?: string;
  $ref?: string;
}

/** Where the schema of each named parameter of an operation lives in the document, as a `$ref`. */
function parameterSchemaRefs(contract: ContractName, operationId: string, names: readonly string[]): Record<string, { $ref: string }> {
  const document = loadContractDocument(`${ROOT}contracts/openapi/${contract}.yaml`).document as {
    paths?: Record<string, Record<string, { operationId?: string; parameters?: ParameterEntry[] }>>;
    components?: { parameters?: Record<string, ParameterEntry> };
  };
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(item)) {
      if (operation.operationId !== operationId) continue;
      const refs: Record<string, { $ref: string }> = {};
      (operation.parameters ?? []).forEach((parameter, index) => {
        const shared = parameter.$ref?.startsWith('#/components/parameters/') ? parameter.$ref.slice('#/components/parameters/'.length) : undefined;
        const name = shared === undefined ? parameter.name : document.components?.parameters?.[shared]?.name;
        const at = shared === undefined ? `#/paths/${pointerSegment(path)}/${method}/parameters/${index}` : `#/components/parameters/${shared}`;
        if (name !== undefined && names.includes(name)) refs[name] = { $ref: `contract:${contract}${at}/schema` };
      });
      const missing = names.filter((name) => !(name in refs));
      if (missing.length > 0) throw new Error(`${contract}: ${operationId} has no parameter ${missing.join(', ')}`);
      return refs;
    }
  }
  throw new Error(`${contract}: no operation ${operationId}`);
}

/**
 * The contract's rules for some parameters of one operation (`'listArticles'`, `['q', 'tag']`), for
 * the same filters reached another way (GraphQL's `articles(filters:)`): the value is an object of
 * those parameters, absent and null ones skipped, and violations are named after the parameter.
 */
export function contractParameterCheck(contract: ContractName, operationId: string, names: readonly string[]): ContractCheck {
  let validate: ValidateFunction | undefined;
  return (value) => {
    validate ??= ajvWith(contract).compile({ type: 'object', properties: parameterSchemaRefs(contract, operationId, names) });
    const given = Object.fromEntries(Object.entries(value as Record<string, unknown>).filter(([name, item]) => names.includes(name) && item != null));
    return validate(given) ? [] : violationsOf(validate.errors ?? []);
  };
}
