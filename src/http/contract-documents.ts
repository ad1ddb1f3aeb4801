import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Document } from 'openapi-backend';
import openApiSchemaValidator from 'openapi-schema-validator';
import { ROOT } from '../server/paths.js';

/** One OpenAPI document of `contracts/openapi`, read once per process. */
export interface ContractDocument {
  /** The file name without `.yaml` (`users`), as published under `/openapi/<name>.yaml`. */
  name: string;
  path: string;
  /** The YAML exactly as written. */
  text: string;
  /** The parsed document, shared by every reader in the process: never mutate it. */
  document: Document;
  /** `prebuilt`: the JSON the build wrote for this very text; `yaml`: parsed here and validated against the meta-schema. */
  source: 'prebuilt' | 'yaml';
}

/**
 * Where `npm run build` writes each document as JSON (`<name>.json`: `{ sha256, document }`), next
 * to the compiled code (`dist/prebuilt/openapi/`). Under tsx or jest this resolves to a directory that
 * does not exist, so the sources are always parsed and validated there.
 */
const PREBUILT_DIR = fileURLToPath(new URL('../../prebuilt/openapi/', import.meta.url));

export interface LoadOptions {
  /** Directory of the build's JSON documents; tests point it elsewhere. */
  prebuiltDir?: string;
}

interface Prebuilt {
  sha256: string;
  document: Document;
}

const cache = new Map<string, ContractDocument>();
let metaSchema: InstanceType<typeof openApiSchemaValidator.default> | undefined;

/**
 * Reads an OpenAPI document once per process (the REST engine and the contracts module share it).
 * A document the build pre-parsed is taken from its JSON when the YAML's SHA-256 still matches: the
 * build refuses an invalid document, so that text has passed the OpenAPI 3 meta-schema already, and
 * parsing the YAML and compiling the meta-schema were over a third of the start-up CPU. Anything
 * else (dev, tests, a contract edited after the build) is parsed from YAML and validated here, and an
 * invalid document refuses the start.
 */
export function loadContractDocument(file: string, options: LoadOptions = {}): ContractDocument {
  const prebuiltDir = options.prebuiltDir ?? PREBUILT_DIR;
  const path = resolve(file); // `${ROOT}contracts/…` and join(ROOT, 'contracts', …) are one document
  const key = `${prebuiltDir}\0${path}`;
  const cached = cache.get(key);
  if (cached) return cached;
  const text = readFileSync(path, 'utf8');
  const name = basename(path).replace(/\.ya?ml$/, '');
  const prebuilt = readPrebuilt(join(prebuiltDir, `${name}.json`));
  let loaded: ContractDocument;
  if (prebuilt && prebuilt.sha256 === sha256(text)) {
    loaded = { name, path, text, document: prebuilt.document, source: 'prebuilt' };
  } else {
    const document = parseYaml(text) as Document;
    assertValidOpenApi(document, path);
    loaded = { name, path, text, document, source: 'yaml' };
  }
  cache.set(key, loaded);
  return loaded;
}

/** Every OpenAPI document of `contracts/openapi`, sorted by name. */
export function loadContractDocuments(options: LoadOptions = {}): ContractDocument[] {
  const dir = join(ROOT, 'contracts/openapi');
  return readdirSync(dir)
    .filter((file) => file.endsWith('.yaml'))
    .sort()
    .map((file) => loadContractDocument(join(dir, file), options));
}

/** The hash the build records: of the YAML's UTF-8 bytes, hex. */
export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function readPrebuilt(file: string): Prebuilt | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined; // no build output (dev, tests): parse the YAML
  }
  const parsed = JSON.parse(text) as Partial<Prebuilt>;
  return typeof parsed.sha256 === 'string' && typeof parsed.document === 'object' && parsed.document !== null ? (parsed as Prebuilt) : undefined;
}

/**
 * The YAML parser is loaded only when a document has to be parsed: the built server reads JSON and
 * never needs it (loading it was ~70 files). `yaml` ships CommonJS, so a synchronous require works.
 */
function parseYaml(text: string): unknown {
  const yaml = createRequire(import.meta.url)('yaml') as typeof import('yaml');
  return yaml.parse(text);
}

/**
 * openapi-backend's strict `validateDefinition`, with the OpenAPI 3 meta-schema compiled once per
 * process rather than once per document.
 */
function assertValidOpenApi(document: Document, path: string): void {
  metaSchema ??= new openApiSchemaValidator.default({ version: 3 });
  const { errors } = metaSchema.validate(document as Parameters<typeof metaSchema.validate>[0]);
  if (errors.length > 0) throw new Error(`${path} is not valid OpenAPI: ${JSON.stringify(errors, null, 2)}`);
}
