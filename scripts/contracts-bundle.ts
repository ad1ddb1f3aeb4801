/**
 * `npm run contracts:bundle`: writes the contracts as a versioned npm package for client teams,
 * `@contract-first-server/contracts` at the server's version, into dist/contracts/ (`--out <dir>` to
 * write elsewhere). Publish it with `npm publish ./dist/contracts` or hand over the tarball of
 * `npm pack ./dist/contracts` (without `./`, npm reads `dist/contracts` as a GitHub repository).
 *   openapi/<name>.yaml|json   every OpenAPI document, bundled (external $refs inlined)
 *   openapi/<name>.js|d.ts     openapi-typescript types (`paths`, `components`, `operations`)
 *   graphql/<name>.graphql     the GraphQL SDL; graphql/<name>.js|d.ts its codegen types
 *   proto/**                   the .proto sources, protobuf-es code (.js + .d.ts), image.binpb (buf image)
 *   clients/rest.js            one typed fetch client over any `paths` type; clients/<name>.js per REST API
 *   clients/cloud.js           createCloudClient(transport): a Connect client for every gRPC service
 *   sdk/index.js               the SDK layer (src/sdk): retries, idempotency keys, wait, credentials, paging
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { bundle, createConfig } from '@redocly/openapi-core';
import { stringify } from 'yaml';
import { BUF, option, ROOT } from './contracts/contract-sets.js';

const out = resolve(option(process.argv.slice(2), '--out') ?? join(ROOT, 'dist/contracts'));
const rootPackage = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  license: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const versionOf = (name: string) => rootPackage.dependencies[name] ?? rootPackage.devDependencies[name] ?? '*';

function listFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? listFiles(path) : [path];
  });
}

const pascal = (name: string) => name.replace(/(^|[-_.\s]+)(\w)/g, (_match, _separator: string, letter: string) => letter.toUpperCase());
const lowerFirst = (name: string) => name.charAt(0).toLowerCase() + name.slice(1);

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
mkdirSync(join(ROOT, '.tmp'), { recursive: true });
const work = mkdtempSync(join(ROOT, '.tmp/contracts-bundle-'));
try {
  // 1. TypeScript sources: the generated types plus the clients, compiled to .js + .d.ts.
  const src = join(work, 'src');
  for (const folder of ['openapi', 'proto', 'graphql']) {
    if (existsSync(join(ROOT, 'generated', folder))) cpSync(join(ROOT, 'generated', folder), join(src, folder), { recursive: true });
  }
  cpSync(join(ROOT, 'scripts/contracts/package-src/clients/rest.ts'), join(src, 'clients/rest.ts'));
  // The SDK layer is the very code `cfs` runs (src/sdk); it imports only generated code, packages and
  // the reset-mask engine (the server's own tree and printer), which the package holds beside it.
  mkdirSync(join(src, 'sdk'), { recursive: true });
  for (const file of readdirSync(join(ROOT, 'src/sdk')).filter((name) => name.endsWith('.ts'))) {
    const text = readFileSync(join(ROOT, 'src/sdk', file), 'utf8');
    const foreign = [...text.matchAll(/from '(\.\.\/[^']*)'/g)]
      .map((match) => match[1] ?? '')
      .filter((path) => !path.startsWith('../../generated/proto/') && !path.startsWith('../engines/reset-mask/'));
    if (foreign.length > 0)
      throw new Error(`src/sdk/${file} imports ${foreign.join(', ')}: the SDK may import only generated/proto, the reset-mask engine and packages`);
    writeFileSync(join(src, 'sdk', file), text.replaceAll("from '../../generated/proto/", "from '../proto/"));
  }
  // The engine files the SDK imports, and theirs within the folder (the rest of the engine stays out).
  const engine = join(ROOT, 'src/engines/reset-mask');
  const wanted = [...readdirSync(join(ROOT, 'src/sdk')).filter((name) => name.endsWith('.ts'))].flatMap((file) =>
    [...readFileSync(join(ROOT, 'src/sdk', file), 'utf8').matchAll(/from '\.\.\/engines\/reset-mask\/([\w-]+)\.js'/g)].map((match) => match[1] ?? ''),
  );
  const copied = new Set<string>();
  for (let name = wanted.pop(); name !== undefined; name = wanted.pop()) {
    if (copied.has(name)) continue;
    copied.add(name);
    const text = readFileSync(join(engine, `${name}.ts`), 'utf8');
    if (/from '\.\.\//.test(text)) throw new Error(`src/engines/reset-mask/${name}.ts imports from outside its folder: the SDK's package cannot hold it`);
    wanted.push(...[...text.matchAll(/from '\.\/([\w-]+)\.js'/g)].map((match) => match[1] ?? ''));
    mkdirSync(join(src, 'engines/reset-mask'), { recursive: true });
    writeFileSync(join(src, 'engines/reset-mask', `${name}.ts`), text);
  }

  const openapiDir = join(ROOT, 'contracts/openapi');
  const documents = readdirSync(openapiDir)
    .filter((file) => file.endsWith('.yaml'))
    .sort()
    .map((file) => file.replace(/\.yaml$/, ''));
  const index: string[] = [
    "export { createRestClient } from './clients/rest.js';",
    "export type { RestClient, RestClientOptions, RestResponse, PathsWith, OperationOf, CallInit } from './clients/rest.js';",
  ];
  for (const name of documents) {
    const factory = `create${pascal(name)}Client`;
    writeFileSync(
      join(src, `clients/${name}.ts`),
      `import type { paths } from '../openapi/${name}.js';\nimport { createRestClient, type RestClient, type RestClientOptions } from './rest.js';\n\n` +
        `export type { paths, components, operations } from '../openapi/${name}.js';\n\n` +
        `/** A typed client of contracts/openapi/${name}.yaml (paths, parameters, bodies and responses checked by the compiler). */\n` +
        `export function ${factory}(baseUrl: string, options?: RestClientOptions): RestClient<paths> {\n  return createRestClient<paths>(baseUrl, options);\n}\n`,
    );
    index.push(`export { ${factory} } from './clients/${name}.js';`);
    index.push(
      `export type { paths as ${pascal(name)}Paths, components as ${pascal(name)}Components, operations as ${pascal(name)}Operations } from './openapi/${name}.js';`,
    );
  }

  // Every service of the cloud API (contracts/proto), found in the generated code: no list to maintain.
  const services: Array<{ name: string; file: string; key: string; typeName: string }> = [];
  for (const file of listFiles(join(ROOT, 'generated/proto/cloud'))
    .filter((path) => path.endsWith('_pb.ts'))
    .sort()) {
    const text = readFileSync(file, 'utf8');
    // buf style: the directory is the package (cloud/compute/v1 → cloud.compute.v1).
    const packageName = relative(join(ROOT, 'generated/proto'), dirname(file)).replace(/\//g, '.');
    for (const match of text.matchAll(/^export const (\w+): GenService</gm)) {
      const name = match[1] ?? '';
      services.push({ name, file: relative(join(ROOT, 'generated'), file).replace(/\.ts$/, '.js'), key: lowerFirst(name), typeName: `${packageName}.${name}` });
    }
  }
  for (const service of services) {
    if (services.filter((other) => other.key === service.key).length > 1) {
      const area = service.typeName.split('.').filter((part) => part !== 'cloud' && !/^v\d/.test(part))[0] ?? '';
      service.key = `${lowerFirst(pascal(area))}${service.name}`;
    }
  }
  writeFileSync(
    join(src, 'clients/cloud.ts'),
    `import { createClient, type Client, type Transport } from '@connectrpc/connect';\n` +
      services.map((service, position) => `import { ${service.name} as Service${position} } from '../${service.file}';`).join('\n') +
      `\n\n/** Every service of the cloud API (gRPC, gRPC-Web and Connect), by client property name. */\nexport const cloudServices = {\n` +
      services.map((service, position) => `  /** ${service.typeName} */\n  ${service.key}: Service${position},`).join('\n') +
      `\n} as const;\n\nexport type CloudClient = { [K in keyof typeof cloudServices]: Client<(typeof cloudServices)[K]> };\n\n` +
      `/**\n * One typed client per cloud service over a Connect transport, e.g. createGrpcTransport({ baseUrl })\n * from @connectrpc/connect-node, or createConnectTransport from @connectrpc/connect-web in a browser.\n */\n` +
      `export function createCloudClient(transport: Transport): CloudClient {\n  return {\n` +
      services.map((service) => `    ${service.key}: createClient(cloudServices.${service.key}, transport),`).join('\n') +
      `\n  };\n}\n`,
  );
  index.push("export { cloudServices, createCloudClient } from './clients/cloud.js';", "export type { CloudClient } from './clients/cloud.js';");
  writeFileSync(join(src, 'index.ts'), `${index.join('\n')}\n`);

  writeFileSync(
    join(work, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        lib: ['ES2023', 'DOM'],
        types: [],
        strict: true,
        declaration: true,
        skipLibCheck: true,
        rootDir: 'src',
        outDir: out,
        removeComments: false,
      },
      include: ['src'],
    }),
  );
  execFileSync(join(ROOT, 'node_modules/.bin/tsc'), ['-p', join(work, 'tsconfig.json')], { cwd: ROOT, stdio: 'inherit' });

  // 2. The contracts themselves.
  const config = await createConfig({});
  for (const name of documents) {
    const { bundle: bundled } = await bundle({ ref: join(openapiDir, `${name}.yaml`), config });
    writeFileSync(join(out, `openapi/${name}.yaml`), stringify(bundled.parsed));
    writeFileSync(join(out, `openapi/${name}.json`), `${JSON.stringify(bundled.parsed, null, 2)}\n`);
  }
  for (const file of listFiles(join(ROOT, 'contracts/graphql')).filter((path) => path.endsWith('.graphql')))
    cpSync(file, join(out, 'graphql', relative(join(ROOT, 'contracts/graphql'), file)));
  for (const base of ['contracts/proto', 'third_party/proto']) {
    for (const file of listFiles(join(ROOT, base)).filter((path) => path.endsWith('.proto')))
      cpSync(file, join(out, 'proto', relative(join(ROOT, base), file)));
  }
  execFileSync(BUF, ['build', 'contracts/proto', '-o', join(out, 'proto/image.binpb')], { cwd: ROOT, stdio: 'inherit' });

  // 3. The package manifest and a README.
  const version = rootPackage.version;
  const manifest = {
    name: '@contract-first-server/contracts',
    version,
    description:
      'The contracts of contract-first-server: OpenAPI documents, protobuf (buf image and sources), GraphQL SDL, generated TypeScript types and typed clients.',
    license: rootPackage.license,
    type: 'module',
    main: './index.js',
    types: './index.d.ts',
    exports: { '.': { types: './index.d.ts', default: './index.js' }, './sdk': { types: './sdk/index.d.ts', default: './sdk/index.js' }, './*': './*' },
    sideEffects: false,
    peerDependencies: {
      '@bufbuild/protobuf': `^${versionOf('@bufbuild/protobuf')}`,
      '@connectrpc/connect': `^${versionOf('@connectrpc/connect')}`,
      graphql: `^${versionOf('graphql').split('.')[0]}.0.0`,
    },
    peerDependenciesMeta: { graphql: { optional: true } },
  };
  writeFileSync(join(out, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  // The package is the repository's license and contract history (CHANGELOG.md is about the contracts).
  for (const file of ['LICENSE', 'CHANGELOG.md']) cpSync(join(ROOT, file), join(out, file));
  writeFileSync(
    join(out, 'README.md'),
    `# @contract-first-server/contracts ${version}\n\nThe published contracts of contract-first-server and typed clients built from them. See docs/contracts.md in the server repository.\n\n` +
      `- REST: ${documents.map((name) => `\`create${pascal(name)}Client(baseUrl, { token })\` (openapi/${name}.yaml)`).join(', ')}\n` +
      `- gRPC / Connect: \`createCloudClient(transport)\` with ${services.map((service) => `\`${service.key}\``).join(', ')}; protobuf-es types under \`proto/\`, a buf image at \`proto/image.binpb\`\n` +
      "- The SDK layer (`@contract-first-server/contracts/sdk`): `createCloudSdk({ baseUrl, transport: createGrpcTransport, credentials })` — idempotency keys, retries by the server's answer, `wait(operation)`, service-account key credentials refreshed in the background, List calls as async iterators\n" +
      '- GraphQL: the SDL and its types under `graphql/` (types need the optional peer `graphql`)\n',
  );
  console.log(
    `wrote ${manifest.name}@${version} to ${relative(ROOT, out) || out}: ${documents.length} OpenAPI document(s), ${services.length} gRPC service(s)`,
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}
