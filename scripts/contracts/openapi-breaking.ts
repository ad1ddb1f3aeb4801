/**
 * A focused change checker for OpenAPI 3.0 documents (no installable diff tool works offline).
 *
 * It compares the last released document with the current one and reports every change, each on the
 * severity scale of scripts/contracts/changes.ts: breaking (a client built against the released one
 * can fail), dangerous, additive, or documentation-only (descriptions, summaries, examples, `links`). The rule of thumb: a request may only get more permissive
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

import type { Severity } from './changes.js';

export type Direction = 'request' | 'response';

/** One breaking change: where it is and what happened, rendered as `${location}: ${message}.` */
export interface OpenApiBreak {
  location: string;
  message: string;
}

/** Any change: a break or not, with what a client must do about it. */
export interface OpenApiChange extends OpenApiBreak {
  severity: Severity;
  action: string;
}

const DEFAULT_ACTION: Record<Severity, string> = {
  breaking: 'adapt the client before it talks to the new version',
  dangerous: 'check that the client handles it',
  additive: 'nothing to do; regenerate the client to use it',
  documentation: 'nothing to do',
};

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
  return findOpenApiChanges(released, current, documentName)
    .filter((change) => change.severity === 'breaking')
    .map(({ location, message }) => ({ location, message }));
}

/** Every change from `released` to `current`, breaking or not; documentation changes last. */
export function findOpenApiChanges(released: unknown, current: unknown, documentName = 'openapi'): OpenApiChange[] {
  const checker = new Checker(asObject(released), asObject(current), documentName);
  return [...checker.run(), ...documentationChanges(asObject(released), asObject(current), documentName)];
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
  private readonly breaks: OpenApiChange[] = [];
  /** The (old, new) schema pairs being compared right now: a recursive schema stops at its second visit. */
  private readonly active = new Map<Json, Set<Json>>();

  constructor(
    private readonly oldDoc: Json,
    private readonly newDoc: Json,
    private readonly documentName: string,
  ) {}

  run(): OpenApiChange[] {
    const oldPaths = asObject(this.oldDoc.paths);
    const newPaths = asObject(this.newDoc.paths);
    const newByShape = new Map(Object.keys(newPaths).map((path) => [pathShape(path), path]));
    const oldShapes = new Set(Object.keys(oldPaths).map(pathShape));
    for (const [path, rawOldItem] of Object.entries(oldPaths)) {
      const newPath = newByShape.get(pathShape(path));
      if (newPath === undefined) {
        this.report(this.documentName, `the path ${path} was removed`, 'breaking', 'stop calling it');
        continue;
      }
      const oldItem = this.resolve(rawOldItem, this.oldDoc);
      const newItem = this.resolve(newPaths[newPath], this.newDoc);
      for (const method of METHODS) {
        const oldOperation = oldItem[method];
        const newOperation = newItem[method];
        const where = `${this.documentName}, ${method.toUpperCase()} ${oldOperation === undefined ? newPath : path}`;
        if (oldOperation === undefined) {
          if (newOperation !== undefined) this.report(where, `the operation ${describeOperation(asObject(newOperation))}was added`, 'additive', 'nothing to do; call it to use it');
          continue;
        }
        if (newOperation === undefined) {
          this.report(where, 'the operation was removed', 'breaking', 'stop calling it');
          continue;
        }
        this.compareOperation(where, path, newPath, oldItem, asObject(oldOperation), newItem, asObject(newOperation));
      }
    }
    for (const [path, rawNewItem] of Object.entries(newPaths)) {
      if (oldShapes.has(pathShape(path))) continue;
      const newItem = this.resolve(rawNewItem, this.newDoc);
      for (const method of METHODS) {
        if (newItem[method] === undefined) continue;
        this.report(`${this.documentName}, ${method.toUpperCase()} ${path}`, `the operation ${describeOperation(asObject(newItem[method]))}was added`, 'additive', 'nothing to do; call it to use it');
      }
    }
    this.compareComponents();
    if (JSON.stringify(this.oldDoc.servers) !== JSON.stringify(this.newDoc.servers)) {
      const urls = (doc: Json) => asArray(doc.servers).map((server) => String(asObject(server).url)).join(', ') || 'none';
      this.report(this.documentName, `the servers changed from ${urls(this.oldDoc)} to ${urls(this.newDoc)}`, 'dangerous', 'check the base URL the client uses');
    }
    return this.breaks;
  }

  private report(location: string, message: string, severity: Severity = 'breaking', action = DEFAULT_ACTION[severity]): void {
    this.breaks.push({ location, message, severity, action });
  }

  /** Named schemas are types in generated clients (`components['schemas']['UserDto']`). */
  private compareComponents(): void {
    const oldSchemas = asObject(asObject(this.oldDoc.components).schemas);
    const newSchemas = asObject(asObject(this.newDoc.components).schemas);
    for (const name of Object.keys(oldSchemas)) {
      if (newSchemas[name] === undefined) this.report(`${this.documentName}, schema ${name}`, 'the schema was removed', 'breaking', `stop naming the type ${name} in code`);
    }
    for (const name of Object.keys(newSchemas)) {
      if (oldSchemas[name] === undefined) this.report(`${this.documentName}, schema ${name}`, 'the schema was added', 'additive', 'nothing to do');
    }
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
    if (typeof oldOperation.operationId === 'string' && typeof newOperation.operationId === 'string' && oldOperation.operationId !== newOperation.operationId) {
      this.report(
        where,
        `the operationId changed from ${quote(oldOperation.operationId)} to ${quote(newOperation.operationId)}`,
        'breaking',
        `rename it where generated code names the operation (operations['${oldOperation.operationId}'] → operations['${newOperation.operationId}'])`,
      );
    }
    if (newOperation.deprecated === true && oldOperation.deprecated !== true) this.report(where, 'the operation is deprecated', 'additive', 'plan to stop calling it');
    this.compareSecurity(where, oldOperation, newOperation);
    const oldParams = this.parameters(oldPath, oldItem, oldOperation, this.oldDoc);
    const newParams = this.parameters(newPath, newItem, newOperation, this.newDoc);
    for (const [key, oldParam] of oldParams) {
      const newParam = newParams.get(key);
      const label = `${String(oldParam.in)} parameter ${quote(String(oldParam.name))}`;
      if (!newParam) {
        if (oldParam.in !== 'path') this.report(where, `the ${label} was removed`, 'breaking', 'stop sending it');
        continue;
      }
      if (newParam.required === true && oldParam.required !== true) this.report(where, `the ${label} became required`, 'breaking', 'send it on every call');
      if (newParam.required !== true && oldParam.required === true) this.report(where, `the ${label} became optional`, 'additive', 'nothing to do; it may be left out');
      if (newParam.deprecated === true && oldParam.deprecated !== true) this.report(where, `the ${label} is deprecated`, 'additive', 'plan to stop sending it');
      this.compareSchema(where, { base: `the ${label}`, path: [] }, this.resolve(oldParam.schema, this.oldDoc), this.resolve(newParam.schema, this.newDoc), 'request');
    }
    for (const [key, newParam] of newParams) {
      if (oldParams.has(key) || newParam.in === 'path') continue;
      const label = `${String(newParam.in)} parameter ${quote(String(newParam.name))}`;
      if (newParam.required === true) this.report(where, `the required ${label} was added`, 'breaking', 'send it on every call');
      else this.report(where, `the optional ${label} was added`, 'additive', 'nothing to do; send it to use it');
    }

    const oldBody = this.resolve(oldOperation.requestBody, this.oldDoc);
    const newBody = this.resolve(newOperation.requestBody, this.newDoc);
    const hadBody = oldOperation.requestBody !== undefined;
    const hasBody = newOperation.requestBody !== undefined;
    if (hadBody && !hasBody) this.report(where, 'the request body was removed', 'breaking', 'stop sending a body');
    if (hasBody && newBody.required === true && oldBody.required !== true) {
      this.report(where, hadBody ? 'the request body became required' : 'a required request body was added', 'breaking', 'send a body on every call');
    }
    if (!hadBody && hasBody && newBody.required !== true) this.report(where, 'an optional request body was added', 'additive', 'nothing to do; send it to use it');
    if (hadBody && hasBody && oldBody.required === true && newBody.required !== true) this.report(where, 'the request body became optional', 'additive', 'nothing to do; it may be left out');
    if (hadBody && hasBody) {
      const oldContent = asObject(oldBody.content);
      const newContent = asObject(newBody.content);
      for (const type of Object.keys(newContent)) {
        if (oldContent[type] === undefined) this.report(where, `the request content type ${type} is accepted too`, 'additive', 'nothing to do');
      }
      for (const [type, oldMedia] of Object.entries(oldContent)) {
        const newMedia = newContent[type];
        if (newMedia === undefined) {
          this.report(where, `the request content type ${type} is no longer accepted`, 'breaking', 'send one of the accepted content types');
          continue;
        }
        const subject = Object.keys(oldContent).length > 1 ? `the request body (${type})` : 'the request body';
        this.compareSchema(where, { base: subject, path: [] }, this.resolve(asObject(oldMedia).schema, this.oldDoc), this.resolve(asObject(newMedia).schema, this.newDoc), 'request');
      }
    }

    const oldResponses = asObject(oldOperation.responses);
    const newResponses = asObject(newOperation.responses);
    for (const [status, rawNewResponse] of Object.entries(newResponses)) {
      if (oldResponses[status] !== undefined) continue;
      const response = this.resolve(rawNewResponse, this.newDoc);
      const about = typeof response.description === 'string' && response.description.trim() !== '' ? ` (${firstSentence(response.description)})` : '';
      this.report(where, `the ${status} response is newly documented${about}`, 'dangerous', `handle status ${status}, or let the client's default handling cover it`);
    }
    for (const [status, rawOldResponse] of Object.entries(oldResponses)) {
      if (newResponses[status] === undefined) {
        this.report(where, `the ${status} response is no longer documented`, 'breaking', `do not rely on status ${status}`);
        continue;
      }
      const oldResponse = this.resolve(rawOldResponse, this.oldDoc);
      const newResponse = this.resolve(newResponses[status], this.newDoc);
      const newHeaders = asObject(newResponse.headers);
      const oldHeaders = asObject(oldResponse.headers);
      for (const header of Object.keys(oldHeaders)) {
        const present = Object.keys(newHeaders).some((name) => name.toLowerCase() === header.toLowerCase());
        if (!present) this.report(where, `the ${status} response header ${quote(header)} was removed`, 'breaking', 'stop reading it');
      }
      for (const header of Object.keys(newHeaders)) {
        const present = Object.keys(oldHeaders).some((name) => name.toLowerCase() === header.toLowerCase());
        if (!present) this.report(where, `the ${status} response header ${quote(header)} was added`, 'additive', 'nothing to do; read it to use it');
      }
      const oldContent = asObject(oldResponse.content);
      const newContent = asObject(newResponse.content);
      for (const type of Object.keys(newContent)) {
        if (oldContent[type] === undefined) this.report(where, `the ${status} response may have the content type ${type} too`, 'additive', 'nothing to do; ask for it with Accept to use it');
      }
      for (const [type, oldMedia] of Object.entries(oldContent)) {
        const newMedia = newContent[type];
        if (newMedia === undefined) {
          this.report(where, `the ${status} response no longer has the content type ${type}`, 'breaking', 'ask for one of the remaining content types');
          continue;
        }
        const subject = Object.keys(oldContent).length > 1 ? `the ${status} response (${type})` : `the ${status} response`;
        this.compareSchema(where, { base: subject, path: [] }, this.resolve(asObject(oldMedia).schema, this.oldDoc), this.resolve(asObject(newMedia).schema, this.newDoc), 'response');
      }
    }
  }

  /** The security requirements that apply to the operation (its own, else the document's); `[]` or `{}` among them means public. */
  private compareSecurity(where: string, oldOperation: Json, newOperation: Json): void {
    const effective = (operation: Json, doc: Json) => asArray(operation.security ?? doc.security);
    const before = effective(oldOperation, this.oldDoc);
    const after = effective(newOperation, this.newDoc);
    if (JSON.stringify(before) === JSON.stringify(after)) return;
    const isPublic = (requirements: unknown[]) => requirements.length === 0 || requirements.some((requirement) => Object.keys(asObject(requirement)).length === 0);
    const schemes = (requirements: unknown[]) => [...new Set(requirements.flatMap((requirement) => Object.keys(asObject(requirement))))].join(' or ') || 'none';
    if (isPublic(before) && !isPublic(after)) this.report(where, `the operation now requires authentication (${schemes(after)})`, 'breaking', `send ${schemes(after)} credentials`);
    else if (!isPublic(before) && isPublic(after)) this.report(where, 'the operation no longer requires authentication', 'additive', 'nothing to do');
    else if (before.every((requirement) => after.some((candidate) => JSON.stringify(candidate) === JSON.stringify(requirement)))) {
      this.report(where, `the operation accepts ${schemes(after)} credentials (was ${schemes(before)})`, 'additive', 'nothing to do');
    } else this.report(where, `the accepted credentials changed from ${schemes(before)} to ${schemes(after)}`, 'dangerous', 'check that the client sends accepted credentials');
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
      const change = `the type of ${subject} changed from ${oldType ?? 'any'} to ${newType ?? 'any'}`;
      if (!widened) {
        this.report(where, change, 'breaking', request ? `send ${newType ?? 'any'} values` : `read it as ${newType ?? 'any'}`);
        return;
      }
      this.report(where, change, 'additive', 'nothing to do (compatible)');
    }
    if (request && oldSchema.nullable === true && newSchema.nullable !== true) this.report(where, `${subject} no longer accepts null`, 'breaking', 'stop sending null');
    if (!request && oldSchema.nullable !== true && newSchema.nullable === true) this.report(where, `${subject} may now be null`, 'breaking', 'handle null');
    if (request && oldSchema.nullable !== true && newSchema.nullable === true) this.report(where, `${subject} accepts null too`, 'additive', 'nothing to do');
    if (!request && oldSchema.nullable === true && newSchema.nullable !== true) this.report(where, `${subject} is never null any more`, 'additive', 'nothing to do');
    if (newSchema.deprecated === true && oldSchema.deprecated !== true && at.path.length > 0) this.report(where, `${subject} is deprecated`, 'additive', request ? 'plan to stop sending it' : 'plan to stop reading it');

    const oldEnum = Array.isArray(oldSchema.enum) ? oldSchema.enum : undefined;
    const newEnum = Array.isArray(newSchema.enum) ? newSchema.enum : undefined;
    const minus = (from: unknown[], values: unknown[]) => from.filter((value) => !values.some((candidate) => JSON.stringify(candidate) === JSON.stringify(value)));
    if (request && newEnum) {
      if (!oldEnum) this.report(where, `${subject} is now restricted to ${list(newEnum)}`, 'breaking', `send only ${list(newEnum)}`);
      else {
        const removed = minus(oldEnum, newEnum);
        if (removed.length > 0) this.report(where, `${subject} no longer accepts ${list(removed)}`, 'breaking', `stop sending ${list(removed)}`);
        const added = minus(newEnum, oldEnum);
        if (added.length > 0) this.report(where, `${subject} accepts ${list(added)} too`, 'additive', 'nothing to do; send it to use it');
      }
    }
    if (request && oldEnum && !newEnum) this.report(where, `${subject} is no longer restricted to ${list(oldEnum)}`, 'additive', 'nothing to do');
    if (!request && newEnum && oldEnum) {
      const added = minus(newEnum, oldEnum);
      if (added.length > 0) this.report(where, `${subject} may now be ${list(added)}`, 'breaking', `handle ${list(added)} (and unknown values)`);
      const removed = minus(oldEnum, newEnum);
      if (removed.length > 0) this.report(where, `${subject} is no longer ${list(removed)}`, 'additive', 'nothing to do');
    }
    if (!request && oldEnum && !newEnum) this.report(where, `${subject} is no longer restricted to ${list(oldEnum)}`, 'breaking', 'handle any value');
    if (!request && !oldEnum && newEnum) this.report(where, `${subject} is now one of ${list(newEnum)}`, 'additive', 'nothing to do');

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
      const fewer = newAlternatives.length < oldAlternatives.length;
      const more = newAlternatives.length > oldAlternatives.length;
      if (request && fewer) this.report(where, `${subject} accepts fewer ${keyword} alternatives (${oldAlternatives.length} → ${newAlternatives.length})`, 'breaking', 'send only the remaining alternatives');
      if (!request && more) this.report(where, `${subject} has more ${keyword} alternatives (${oldAlternatives.length} → ${newAlternatives.length})`, 'breaking', 'handle the new alternatives');
      if ((request && more) || (!request && fewer)) this.report(where, `${subject} has ${newAlternatives.length} ${keyword} alternatives (was ${oldAlternatives.length})`, 'additive', 'nothing to do');
      const shared = Math.min(oldAlternatives.length, newAlternatives.length);
      for (let index = 0; index < shared; index++) {
        this.compareSchema(where, { ...at, path: [...at.path, `(${keyword} #${index + 1})`] }, this.resolve(oldAlternatives[index], this.oldDoc), this.resolve(newAlternatives[index], this.newDoc), direction);
      }
    }
  }

  /** A request schema may only loosen its bounds: the server must keep accepting every old value. */
  private compareRequestBounds(where: string, subject: string, oldSchema: Json, newSchema: Json): void {
    const tighten = 'send only values within the new bound';
    const loosened = (noun: string, before: number, after: number | undefined) =>
      this.report(where, after === undefined ? `${subject} no longer has ${noun.replace(/^the /, 'a ')}` : `${noun} of ${subject} changed from ${before} to ${after}`, 'additive', 'nothing to do');
    const lower = (keyword: string, noun: string) => {
      const before = typeof oldSchema[keyword] === 'number' ? (oldSchema[keyword] as number) : undefined;
      const after = typeof newSchema[keyword] === 'number' ? (newSchema[keyword] as number) : undefined;
      if (before !== undefined && (after === undefined || after < before)) loosened(noun, before, after);
      if (after === undefined || (before !== undefined && after <= before)) return;
      this.report(where, before === undefined ? `${subject} now has ${noun.replace(/^the /, 'a ')} of ${after}` : `${noun} of ${subject} was raised from ${before} to ${after}`, 'breaking', tighten);
    };
    const upper = (keyword: string, noun: string) => {
      const before = typeof oldSchema[keyword] === 'number' ? (oldSchema[keyword] as number) : undefined;
      const after = typeof newSchema[keyword] === 'number' ? (newSchema[keyword] as number) : undefined;
      if (before !== undefined && (after === undefined || after > before)) loosened(noun, before, after);
      if (after === undefined || (before !== undefined && after >= before)) return;
      this.report(where, before === undefined ? `${subject} now has ${noun.replace(/^the /, 'a ')} of ${after}` : `${noun} of ${subject} was lowered from ${before} to ${after}`, 'breaking', tighten);
    };
    lower('minLength', 'the minimum length');
    upper('maxLength', 'the maximum length');
    lower('minimum', 'the minimum');
    upper('maximum', 'the maximum');
    lower('minItems', 'the minimum item count');
    upper('maxItems', 'the maximum item count');
    lower('minProperties', 'the minimum property count');
    upper('maxProperties', 'the maximum property count');
    if (newSchema.exclusiveMinimum === true && oldSchema.exclusiveMinimum !== true) this.report(where, `the minimum of ${subject} became exclusive`, 'breaking', tighten);
    if (newSchema.exclusiveMaximum === true && oldSchema.exclusiveMaximum !== true) this.report(where, `the maximum of ${subject} became exclusive`, 'breaking', tighten);
    if (newSchema.uniqueItems === true && oldSchema.uniqueItems !== true) this.report(where, `${subject} must now have unique items`, 'breaking', 'send no duplicates');
    for (const keyword of ['pattern', 'format', 'multipleOf'] as const) {
      const before = oldSchema[keyword];
      const after = newSchema[keyword];
      if (after !== undefined && JSON.stringify(before) !== JSON.stringify(after)) {
        this.report(
          where,
          before === undefined ? `${subject} now requires the ${keyword} ${JSON.stringify(after)}` : `the ${keyword} of ${subject} changed from ${JSON.stringify(before)} to ${JSON.stringify(after)}`,
          'breaking',
          `send only values matching the ${keyword}`,
        );
      }
      if (after === undefined && before !== undefined) this.report(where, `${subject} no longer requires the ${keyword} ${JSON.stringify(before)}`, 'additive', 'nothing to do');
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
        if (!request) this.report(where, `${property(name)} was removed`, 'breaking', 'stop reading it: it is no longer sent');
        else if (newSchema.additionalProperties === false) this.report(where, `${property(name)} was removed and is now rejected`, 'breaking', 'stop sending it');
        else this.report(where, `${property(name)} was removed; the server ignores it`, 'dangerous', 'stop sending it: it has no effect any more');
        continue;
      }
      if (request && newRequired.has(name) && !oldRequired.has(name) && !hidden(rawNewProperty, this.newDoc)) this.report(where, `${property(name)} became required`, 'breaking', 'send it on every call');
      if (request && oldRequired.has(name) && !newRequired.has(name)) this.report(where, `${property(name)} became optional`, 'additive', 'nothing to do; it may be left out');
      if (!request && oldRequired.has(name) && !newRequired.has(name)) this.report(where, `${property(name)} is no longer required (it may be absent)`, 'breaking', 'treat it as optional');
      if (!request && !oldRequired.has(name) && newRequired.has(name)) this.report(where, `${property(name)} is always present now`, 'additive', 'nothing to do');
      this.compareSchema(where, child(name), this.resolve(rawOldProperty, this.oldDoc), this.resolve(rawNewProperty, this.newDoc), direction);
    }
    for (const [name, rawNewProperty] of Object.entries(newProperties)) {
      if (oldProperties[name] !== undefined || hidden(rawNewProperty, this.newDoc)) continue;
      if (!request) this.report(where, `${property(name)} was added`, 'additive', 'nothing to do; read it to use it');
      else if (!newRequired.has(name)) this.report(where, `the optional ${property(name).slice('the '.length)} was added`, 'additive', 'nothing to do; send it to use it');
    }
    if (request) {
      for (const name of newRequired) {
        if (oldProperties[name] === undefined && !oldRequired.has(name) && !hidden(newProperties[name], this.newDoc)) this.report(where, `the required ${property(name).slice('the '.length)} was added`, 'breaking', 'send it on every call');
      }
      const oldAdditional = oldSchema.additionalProperties;
      const newAdditional = newSchema.additionalProperties;
      if (newAdditional === false && oldAdditional !== false && (oldSchema.type === 'object' || Object.keys(oldProperties).length > 0)) {
        this.report(where, `${subject} no longer accepts additional properties`, 'breaking', 'send only the documented properties');
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

/** `(createUser) ` when the operation has an id, for the sentence "the operation (createUser) was added". */
function describeOperation(operation: Json): string {
  return typeof operation.operationId === 'string' ? `${operation.operationId} ` : '';
}

function firstSentence(text: string): string {
  const line = text.trim().split('\n')[0] ?? '';
  const end = line.search(/[.;:](\s|$)/);
  const short = end === -1 ? line : line.slice(0, end);
  return short.length > 100 ? `${short.slice(0, 97)}…` : short;
}

/**
 * Keywords that change what a reader learns, not what goes over the wire. OpenAPI `links` are here:
 * they describe how one operation's answer feeds another's request (for readers and test tools);
 * no client request or response changes with them.
 */
const DOCUMENTATION_KEYWORDS = new Set(['description', 'summary', 'title', 'example', 'examples', 'externalDocs', 'links', 'tags', 'contact', 'license', 'termsOfService', 'version']);

/**
 * Documentation-only changes: walks both documents side by side (references not followed, so each
 * text is reported once, where it is written) and reports every documentation keyword that was added,
 * removed or rewritten inside a node both documents have; a node only one side has is covered by the
 * structural change that added or removed it.
 */
function documentationChanges(oldDoc: Json, newDoc: Json, documentName: string): OpenApiChange[] {
  const changes: OpenApiChange[] = [];
  const walk = (before: unknown, after: unknown, pointer: string[]) => {
    if (typeof before !== 'object' || before === null || typeof after !== 'object' || after === null) return;
    if (Array.isArray(before) || Array.isArray(after)) {
      if (!Array.isArray(before) || !Array.isArray(after)) return;
      for (let index = 0; index < Math.min(before.length, after.length); index++) {
        const name = asObject(after[index]).name;
        // A parameter is named by its name; the same name on both sides is the same parameter.
        if (typeof name === 'string' && pointer[pointer.length - 1] === 'parameters') {
          const match = before.find((candidate) => asObject(candidate).name === name && asObject(candidate).in === asObject(after[index]).in);
          walk(match, after[index], [...pointer, `${String(asObject(after[index]).in)} parameter ${quote(name)}`]);
        } else walk(before[index], after[index], [...pointer, String(index)]);
      }
      return;
    }
    const oldNode = before as Json;
    const newNode = after as Json;
    for (const key of new Set([...Object.keys(oldNode), ...Object.keys(newNode)])) {
      const documentation = (DOCUMENTATION_KEYWORDS.has(key) || key.startsWith('x-')) && !isNamedMember(pointer);
      if (documentation && key !== 'version') {
        if (JSON.stringify(oldNode[key]) === JSON.stringify(newNode[key])) continue;
        if (key === 'links') {
          const oldLinks = asObject(oldNode[key]);
          const newLinks = asObject(newNode[key]);
          for (const name of new Set([...Object.keys(oldLinks), ...Object.keys(newLinks)])) {
            if (JSON.stringify(oldLinks[name]) === JSON.stringify(newLinks[name])) continue;
            const verb = oldLinks[name] === undefined ? 'was added' : newLinks[name] === undefined ? 'was removed' : 'changed';
            changes.push(documentationChange(documentName, pointer, `the link ${quote(name)} ${verb}`));
          }
          continue;
        }
        const verb = oldNode[key] === undefined ? 'was added' : newNode[key] === undefined ? 'was removed' : 'changed';
        changes.push(documentationChange(documentName, pointer, `the ${key} ${verb}`));
        continue;
      }
      if (key === 'version' && pointer.length === 1 && pointer[0] === 'info' && oldNode.version !== newNode.version) {
        changes.push(documentationChange(documentName, pointer, `info.version changed from ${JSON.stringify(oldNode.version)} to ${JSON.stringify(newNode.version)}`));
        continue;
      }
      walk(oldNode[key], newNode[key], [...pointer, key]);
    }
  };
  walk(oldDoc, newDoc, []);
  return changes;
}

/** Inside `properties`, `paths`, `responses`… the keys are names (a property may be called `title`), not keywords. */
function isNamedMember(pointer: string[]): boolean {
  const parent = pointer[pointer.length - 1];
  return parent === 'properties' || parent === 'paths' || parent === 'responses' || parent === 'schemas' || parent === 'headers' || parent === 'content' || parent === 'parameters' || parent === 'securitySchemes' || parent === 'links' || parent === 'examples';
}

function documentationChange(documentName: string, pointer: string[], message: string): OpenApiChange {
  return { location: `${documentName}${pointer.length > 0 ? `, ${describePointer(pointer)}` : ''}`, message, severity: 'documentation', action: 'nothing to do' };
}

/** `paths./api/users.post.responses.200` → `POST /api/users, the 200 response`; `components.schemas.UserDto.properties.name` → `schema UserDto, property "name"`. */
function describePointer(pointer: string[]): string {
  const parts: string[] = [];
  let index = 0;
  if (pointer[0] === 'paths' && pointer[1] !== undefined) {
    const method = pointer[2];
    if (method !== undefined && (METHODS as readonly string[]).includes(method)) {
      parts.push(`${method.toUpperCase()} ${pointer[1]}`);
      index = 3;
    } else {
      parts.push(`path ${pointer[1]}`);
      index = 2;
    }
  } else if (pointer[0] === 'components' && pointer[1] !== undefined && pointer[2] !== undefined) {
    parts.push(`${pointer[1] === 'schemas' ? 'schema' : pointer[1]} ${pointer[2]}`);
    index = 3;
  }
  const rest = pointer.slice(index);
  const properties: string[] = [];
  for (let at = 0; at < rest.length; at++) {
    const segment = rest[at]!;
    const next = rest[at + 1];
    if (segment === 'properties' && next !== undefined) {
      properties.push(next);
      at++;
    } else if (segment === 'items') properties.push('[]');
    else if (segment === 'responses' && next !== undefined) {
      parts.push(`the ${next} response`);
      at++;
    } else if (segment === 'parameters' && next !== undefined) {
      parts.push(/^\d+$/.test(next) ? `parameter #${Number(next) + 1}` : `the ${next}`);
      at++;
    } else if (segment === 'requestBody') parts.push('the request body');
    else if (segment === 'content' || segment === 'schema' || (rest[at - 1] === 'content' && segment.includes('/'))) continue;
    else if (/^\d+$/.test(segment) && parts.length > 0) parts[parts.length - 1] += `[${segment}]`;
    else parts.push(segment);
  }
  if (properties.length > 0) parts.push(`property ${quote(properties.join('.').replace(/\.\[\]/g, '[]'))}`);
  return parts.join(', ');
}
