/**
 * A focused breaking-change checker for OpenAPI 3.0 documents (no installable diff tool works offline).
 *
 * It compares the last released document with the current one and reports every change that can break
 * a client built against the released one. The rule of thumb: a request may only get more permissive
 * (the server must keep accepting everything it accepted), a response may only get more precise (a
 * client must keep receiving only what it was promised). Decisions where opinions differ:
 * - a request parameter or body property that is removed is breaking (typed clients stop compiling,
 *   and the strict server rejects unknown body properties under `additionalProperties: false`); a
 *   removed body property is only reported when the new schema forbids extra properties;
 * - a value added to a response enum is breaking (clients switch over the values they were promised);
 *   a value added to a request enum is additive;
 * - response numeric/length bounds and formats are not compared (a client does not validate them);
 * - `allOf` is flattened (properties and required merged); `oneOf`/`anyOf` alternatives are compared
 *   by position, and a request losing an alternative is breaking.
 * Only local `#/…` references are resolved (the contracts use no external references).
 */

export type Direction = 'request' | 'response';

/** One breaking change: where it is and what happened, rendered as `${location}: ${message}.` */
export interface OpenApiBreak {
  location: string;
  message: string;
}

type Json = Record<string, unknown>;

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace'] as const;

/** Renders a break as the one sentence the CLI prints. */
export function describeBreak(change: OpenApiBreak): string {
  return `${change.location}: ${change.message}.`;
}

/**
 * Why: client teams build against the released document; this lists every change in `current` that
 * can break such a client, each with its location (`<document>, <METHOD> <path>`).
 */
export function findOpenApiBreaks(released: unknown, current: unknown, documentName = 'openapi'): OpenApiBreak[] {
  const checker = new Checker(asObject(released), asObject(current), documentName);
  return checker.run();
}

function asObject(value: unknown): Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};
}

function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** `/users/{id}` and `/users/{userId}` are the same path to a client. */
function pathShape(path: string): string {
  return path.replace(/\{[^}]*\}/g, '{}');
}

/** Where a schema sits: a base (`the request body`, `the 200 response`, `the query parameter "q"`) and a property path. */
interface Place {
  base: string;
  path: string[];
}

/** `the property "author.name" of the 200 response`, `the items of the property "tags" of the request body`. */
function describePlace(at: Place): string {
  if (at.path.length === 0) return at.base;
  const last = at.path[at.path.length - 1];
  const rest = { base: at.base, path: at.path.slice(0, -1) };
  if (last === '[]') return `the items of ${describePlace(rest)}`;
  if (last === '*') return `the additional properties of ${describePlace(rest)}`;
  const dotted = at.path.join('.').replace(/\.\[\]/g, '[]').replace(/\.\*/g, '.*');
  return `the property ${quote(dotted)} of ${at.base}`;
}

function quote(name: string): string {
  return `"${name}"`;
}

function list(values: unknown[]): string {
  return values.map((value) => JSON.stringify(value)).join(', ');
}

class Checker {
  private readonly breaks: OpenApiBreak[] = [];
  /** The (old, new) schema pairs being compared right now: a recursive schema stops at its second visit. */
  private readonly active = new Map<Json, Set<Json>>();

  constructor(
    private readonly oldDoc: Json,
    private readonly newDoc: Json,
    private readonly documentName: string,
  ) {}

  run(): OpenApiBreak[] {
    const oldPaths = asObject(this.oldDoc.paths);
    const newPaths = asObject(this.newDoc.paths);
    const newByShape = new Map(Object.keys(newPaths).map((path) => [pathShape(path), path]));
    for (const [path, rawOldItem] of Object.entries(oldPaths)) {
      const newPath = newByShape.get(pathShape(path));
      if (newPath === undefined) {
        this.report(this.documentName, `the path ${path} was removed`);
        continue;
      }
      const oldItem = this.resolve(rawOldItem, this.oldDoc);
      const newItem = this.resolve(newPaths[newPath], this.newDoc);
      for (const method of METHODS) {
        const oldOperation = oldItem[method];
        if (oldOperation === undefined) continue;
        const where = `${this.documentName}, ${method.toUpperCase()} ${path}`;
        const newOperation = newItem[method];
        if (newOperation === undefined) {
          this.report(where, 'the operation was removed');
          continue;
        }
        this.compareOperation(where, path, newPath, oldItem, asObject(oldOperation), newItem, asObject(newOperation));
      }
    }
    return this.breaks;
  }

  private report(location: string, message: string): void {
    this.breaks.push({ location, message });
  }

  /** Follows local `$ref`s (chains included) to the object they name. */
  private resolve(value: unknown, doc: Json): Json {
    let current = asObject(value);
    for (let hops = 0; typeof current.$ref === 'string' && hops < 32; hops++) {
      const ref = current.$ref;
      if (!ref.startsWith('#/')) return {};
      let target: unknown = doc;
      for (const segment of ref.slice(2).split('/')) {
        target = asObject(target)[segment.replace(/~1/g, '/').replace(/~0/g, '~')];
      }
      current = asObject(target);
    }
    return current;
  }

  private compareOperation(where: string, oldPath: string, newPath: string, oldItem: Json, oldOperation: Json, newItem: Json, newOperation: Json): void {
    const oldParams = this.parameters(oldPath, oldItem, oldOperation, this.oldDoc);
    const newParams = this.parameters(newPath, newItem, newOperation, this.newDoc);
    for (const [key, oldParam] of oldParams) {
      const newParam = newParams.get(key);
      const label = `${String(oldParam.in)} parameter ${quote(String(oldParam.name))}`;
      if (!newParam) {
        if (oldParam.in !== 'path') this.report(where, `the ${label} was removed`);
        continue;
      }
      if (newParam.required === true && oldParam.required !== true) this.report(where, `the ${label} became required`);
      this.compareSchema(where, { base: `the ${label}`, path: [] }, this.resolve(oldParam.schema, this.oldDoc), this.resolve(newParam.schema, this.newDoc), 'request');
    }
    for (const [key, newParam] of newParams) {
      if (!oldParams.has(key) && newParam.required === true && newParam.in !== 'path') {
        this.report(where, `the required ${String(newParam.in)} parameter ${quote(String(newParam.name))} was added`);
      }
    }

    const oldBody = this.resolve(oldOperation.requestBody, this.oldDoc);
    const newBody = this.resolve(newOperation.requestBody, this.newDoc);
    const hadBody = oldOperation.requestBody !== undefined;
    const hasBody = newOperation.requestBody !== undefined;
    if (hadBody && !hasBody) this.report(where, 'the request body was removed');
    if (hasBody && newBody.required === true && oldBody.required !== true) {
      this.report(where, hadBody ? 'the request body became required' : 'a required request body was added');
    }
    if (hadBody && hasBody) {
      const oldContent = asObject(oldBody.content);
      const newContent = asObject(newBody.content);
      for (const [type, oldMedia] of Object.entries(oldContent)) {
        const newMedia = newContent[type];
        if (newMedia === undefined) {
          this.report(where, `the request content type ${type} is no longer accepted`);
          continue;
        }
        const subject = Object.keys(oldContent).length > 1 ? `the request body (${type})` : 'the request body';
        this.compareSchema(where, { base: subject, path: [] }, this.resolve(asObject(oldMedia).schema, this.oldDoc), this.resolve(asObject(newMedia).schema, this.newDoc), 'request');
      }
    }

    const oldResponses = asObject(oldOperation.responses);
    const newResponses = asObject(newOperation.responses);
    for (const [status, rawOldResponse] of Object.entries(oldResponses)) {
      if (newResponses[status] === undefined) {
        this.report(where, `the ${status} response is no longer documented`);
        continue;
      }
      const oldResponse = this.resolve(rawOldResponse, this.oldDoc);
      const newResponse = this.resolve(newResponses[status], this.newDoc);
      const newHeaders = asObject(newResponse.headers);
      for (const header of Object.keys(asObject(oldResponse.headers))) {
        const present = Object.keys(newHeaders).some((name) => name.toLowerCase() === header.toLowerCase());
        if (!present) this.report(where, `the ${status} response header ${quote(header)} was removed`);
      }
      const oldContent = asObject(oldResponse.content);
      const newContent = asObject(newResponse.content);
      for (const [type, oldMedia] of Object.entries(oldContent)) {
        const newMedia = newContent[type];
        if (newMedia === undefined) {
          this.report(where, `the ${status} response no longer has the content type ${type}`);
          continue;
        }
        const subject = Object.keys(oldContent).length > 1 ? `the ${status} response (${type})` : `the ${status} response`;
        this.compareSchema(where, { base: subject, path: [] }, this.resolve(asObject(oldMedia).schema, this.oldDoc), this.resolve(asObject(newMedia).schema, this.newDoc), 'response');
      }
    }
  }

  /** Path-level and operation-level parameters; path parameters keyed by position (renames are not breaks). */
  private parameters(path: string, item: Json, operation: Json, doc: Json): Map<string, Json> {
    const positions = [...path.matchAll(/\{([^}]*)\}/g)].map((match) => match[1]);
    const result = new Map<string, Json>();
    for (const raw of [...asArray(item.parameters), ...asArray(operation.parameters)]) {
      const param = this.resolve(raw, doc);
      const name = String(param.name);
      const key = param.in === 'path' ? `path#${positions.indexOf(name)}` : `${String(param.in)}:${param.in === 'header' ? name.toLowerCase() : name}`;
      result.set(key, param);
    }
    return result;
  }

  /** Merges `allOf` parts into one schema (properties, required, type, enum, bounds), recursively. */
  private flatten(schema: Json, doc: Json): Json {
    const parts = asArray(schema.allOf);
    if (parts.length === 0) return schema;
    const merged: Json = { ...schema };
    delete merged.allOf;
    const properties: Json = { ...asObject(schema.properties) };
    const required = new Set(asArray(schema.required).map(String));
    for (const raw of parts) {
      const part = this.flatten(this.resolve(raw, doc), doc);
      Object.assign(properties, asObject(part.properties));
      for (const name of asArray(part.required)) required.add(String(name));
      for (const [key, value] of Object.entries(part)) {
        if (key !== 'properties' && key !== 'required' && merged[key] === undefined) merged[key] = value;
      }
    }
    if (Object.keys(properties).length > 0) merged.properties = properties;
    if (required.size > 0) merged.required = [...required];
    return merged;
  }

  private compareSchema(where: string, at: Place, rawOld: Json, rawNew: Json, direction: Direction): void {
    const pairs = this.active.get(rawOld) ?? new Set<Json>();
    if (pairs.has(rawNew)) return;
    pairs.add(rawNew);
    this.active.set(rawOld, pairs);
    try {
      this.compareResolved(where, at, rawOld, rawNew, direction);
    } finally {
      pairs.delete(rawNew);
    }
  }

  private compareResolved(where: string, at: Place, rawOld: Json, rawNew: Json, direction: Direction): void {
    const subject = describePlace(at);
    const oldSchema = this.flatten(rawOld, this.oldDoc);
    const newSchema = this.flatten(rawNew, this.newDoc);
    const request = direction === 'request';
    const oldType = typeof oldSchema.type === 'string' ? oldSchema.type : undefined;
    const newType = typeof newSchema.type === 'string' ? newSchema.type : undefined;

    if (oldType !== newType) {
      const widened = request ? newType === undefined || (oldType === 'integer' && newType === 'number') : oldType === undefined || (oldType === 'number' && newType === 'integer');
      if (!widened) {
        this.report(where, `the type of ${subject} changed from ${oldType ?? 'any'} to ${newType ?? 'any'}`);
        return;
      }
    }
    if (request && oldSchema.nullable === true && newSchema.nullable !== true) this.report(where, `${subject} no longer accepts null`);
    if (!request && oldSchema.nullable !== true && newSchema.nullable === true) this.report(where, `${subject} may now be null`);

    const oldEnum = Array.isArray(oldSchema.enum) ? oldSchema.enum : undefined;
    const newEnum = Array.isArray(newSchema.enum) ? newSchema.enum : undefined;
    if (request && newEnum) {
      if (!oldEnum) this.report(where, `${subject} is now restricted to ${list(newEnum)}`);
      else {
        const removed = oldEnum.filter((value) => !newEnum.some((candidate) => JSON.stringify(candidate) === JSON.stringify(value)));
        if (removed.length > 0) this.report(where, `${subject} no longer accepts ${list(removed)}`);
      }
    }
    if (!request && newEnum && oldEnum) {
      const added = newEnum.filter((value) => !oldEnum.some((candidate) => JSON.stringify(candidate) === JSON.stringify(value)));
      if (added.length > 0) this.report(where, `${subject} may now be ${list(added)}`);
    }
    if (!request && oldEnum && !newEnum) this.report(where, `${subject} is no longer restricted to ${list(oldEnum)}`);

    if (request) this.compareRequestBounds(where, subject, oldSchema, newSchema);

    const oldItems = oldSchema.items;
    const newItems = newSchema.items;
    if (oldItems !== undefined && newItems !== undefined) {
      this.compareSchema(where, { ...at, path: [...at.path, '[]'] }, this.resolve(oldItems, this.oldDoc), this.resolve(newItems, this.newDoc), direction);
    }

    this.compareObject(where, at, oldSchema, newSchema, direction);

    for (const keyword of ['oneOf', 'anyOf'] as const) {
      const oldAlternatives = asArray(oldSchema[keyword]);
      const newAlternatives = asArray(newSchema[keyword]);
      if (oldAlternatives.length === 0 || newAlternatives.length === 0) continue;
      if (request && newAlternatives.length < oldAlternatives.length) {
        this.report(where, `${subject} accepts fewer ${keyword} alternatives (${oldAlternatives.length} → ${newAlternatives.length})`);
      }
      if (!request && newAlternatives.length > oldAlternatives.length) {
        this.report(where, `${subject} has more ${keyword} alternatives (${oldAlternatives.length} → ${newAlternatives.length})`);
      }
      const shared = Math.min(oldAlternatives.length, newAlternatives.length);
      for (let index = 0; index < shared; index++) {
        this.compareSchema(where, { ...at, path: [...at.path, `(${keyword} #${index + 1})`] }, this.resolve(oldAlternatives[index], this.oldDoc), this.resolve(newAlternatives[index], this.newDoc), direction);
      }
    }
  }

  /** A request schema may only loosen its bounds: the server must keep accepting every old value. */
  private compareRequestBounds(where: string, subject: string, oldSchema: Json, newSchema: Json): void {
    const lower = (keyword: string, noun: string) => {
      const before = typeof oldSchema[keyword] === 'number' ? (oldSchema[keyword] as number) : undefined;
      const after = typeof newSchema[keyword] === 'number' ? (newSchema[keyword] as number) : undefined;
      if (after === undefined || (before !== undefined && after <= before)) return;
      this.report(where, before === undefined ? `${subject} now has ${noun.replace(/^the /, 'a ')} of ${after}` : `${noun} of ${subject} was raised from ${before} to ${after}`);
    };
    const upper = (keyword: string, noun: string) => {
      const before = typeof oldSchema[keyword] === 'number' ? (oldSchema[keyword] as number) : undefined;
      const after = typeof newSchema[keyword] === 'number' ? (newSchema[keyword] as number) : undefined;
      if (after === undefined || (before !== undefined && after >= before)) return;
      this.report(where, before === undefined ? `${subject} now has ${noun.replace(/^the /, 'a ')} of ${after}` : `${noun} of ${subject} was lowered from ${before} to ${after}`);
    };
    lower('minLength', 'the minimum length');
    upper('maxLength', 'the maximum length');
    lower('minimum', 'the minimum');
    upper('maximum', 'the maximum');
    lower('minItems', 'the minimum item count');
    upper('maxItems', 'the maximum item count');
    lower('minProperties', 'the minimum property count');
    upper('maxProperties', 'the maximum property count');
    if (newSchema.exclusiveMinimum === true && oldSchema.exclusiveMinimum !== true) this.report(where, `the minimum of ${subject} became exclusive`);
    if (newSchema.exclusiveMaximum === true && oldSchema.exclusiveMaximum !== true) this.report(where, `the maximum of ${subject} became exclusive`);
    if (newSchema.uniqueItems === true && oldSchema.uniqueItems !== true) this.report(where, `${subject} must now have unique items`);
    for (const keyword of ['pattern', 'format', 'multipleOf'] as const) {
      const before = oldSchema[keyword];
      const after = newSchema[keyword];
      if (after !== undefined && JSON.stringify(before) !== JSON.stringify(after)) {
        this.report(where, before === undefined ? `${subject} now requires the ${keyword} ${JSON.stringify(after)}` : `the ${keyword} of ${subject} changed from ${JSON.stringify(before)} to ${JSON.stringify(after)}`);
      }
    }
  }

  private compareObject(where: string, at: Place, oldSchema: Json, newSchema: Json, direction: Direction): void {
    const subject = describePlace(at);
    const request = direction === 'request';
    const oldProperties = asObject(oldSchema.properties);
    const newProperties = asObject(newSchema.properties);
    const oldRequired = new Set(asArray(oldSchema.required).map(String));
    const newRequired = new Set(asArray(newSchema.required).map(String));
    const child = (name: string): Place => ({ ...at, path: [...at.path, name] });
    const property = (name: string) => describePlace(child(name));
    // Properties a side never sends do not count for it (readOnly in requests, writeOnly in responses).
    const hidden = (schema: unknown, doc: Json) => {
      const resolved = this.resolve(schema, doc);
      return request ? resolved.readOnly === true : resolved.writeOnly === true;
    };

    for (const [name, rawOldProperty] of Object.entries(oldProperties)) {
      if (hidden(rawOldProperty, this.oldDoc)) continue;
      const rawNewProperty = newProperties[name];
      if (rawNewProperty === undefined) {
        if (!request) this.report(where, `${property(name)} was removed`);
        else if (newSchema.additionalProperties === false) this.report(where, `${property(name)} was removed and is now rejected`);
        continue;
      }
      if (request && newRequired.has(name) && !oldRequired.has(name) && !hidden(rawNewProperty, this.newDoc)) this.report(where, `${property(name)} became required`);
      if (!request && oldRequired.has(name) && !newRequired.has(name)) this.report(where, `${property(name)} is no longer required (it may be absent)`);
      this.compareSchema(where, child(name), this.resolve(rawOldProperty, this.oldDoc), this.resolve(rawNewProperty, this.newDoc), direction);
    }
    if (request) {
      for (const name of newRequired) {
        if (oldProperties[name] === undefined && !oldRequired.has(name) && !hidden(newProperties[name], this.newDoc)) this.report(where, `the required ${property(name).slice('the '.length)} was added`);
      }
      const oldAdditional = oldSchema.additionalProperties;
      const newAdditional = newSchema.additionalProperties;
      if (newAdditional === false && oldAdditional !== false && (oldSchema.type === 'object' || Object.keys(oldProperties).length > 0)) {
        this.report(where, `${subject} no longer accepts additional properties`);
      }
      if (typeof oldAdditional === 'object' && oldAdditional !== null && typeof newAdditional === 'object' && newAdditional !== null) {
        this.compareSchema(where, child('*'), this.resolve(oldAdditional, this.oldDoc), this.resolve(newAdditional, this.newDoc), direction);
      }
    } else {
      const oldAdditional = oldSchema.additionalProperties;
      const newAdditional = newSchema.additionalProperties;
      if (typeof oldAdditional === 'object' && oldAdditional !== null && typeof newAdditional === 'object' && newAdditional !== null) {
        this.compareSchema(where, child('*'), this.resolve(oldAdditional, this.oldDoc), this.resolve(newAdditional, this.newDoc), direction);
      }
    }
  }
}
