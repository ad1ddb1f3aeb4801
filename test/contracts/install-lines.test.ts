import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

// The `npm install ./contract-first-server-contracts-<version>.tgz …` lines client teams copy from
// the README and docs/: they name the tarball `npm pack ./dist/contracts` writes for this version,
// pin the peers at the versions the server is built and tested with, and include what a Node gRPC
// client needs (@connectrpc/connect-node). The README named 1.0.0 after the package became 2.0.0.

const ROOT = new URL('../../', import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const DOCUMENTS = ['README.md', ...readdirSync(join(ROOT, 'docs')).flatMap((name) => (name.endsWith('.md') ? [`docs/${name}`] : []))];
const INSTALL_LINES = DOCUMENTS.flatMap((path) =>
  readFileSync(join(ROOT, path), 'utf8')
    .split('\n')
    .flatMap((line) => (/npm install \.\/contract-first-server-contracts-/.test(line) ? [[path, line.trim()] as [string, string]] : [])),
);

test('README.md and docs/contracts.md both show the install line', () => {
  expect(new Set(INSTALL_LINES.map(([path]) => path))).toEqual(new Set(['README.md', 'docs/contracts.md']));
});

test.each(INSTALL_LINES)('%s: %s names this version and pinned peers, connect-node included', (_path, line) => {
  const words = line.split(/\s+/).slice(2);
  expect(words[0]).toBe(`./contract-first-server-contracts-${pkg.version}.tgz`);
  const peers = Object.fromEntries(
    words.slice(1).map((word) => {
      const at = word.lastIndexOf('@');
      return [word.slice(0, at), word.slice(at + 1)];
    }),
  );
  expect(Object.keys(peers).sort()).toEqual(['@bufbuild/protobuf', '@connectrpc/connect', '@connectrpc/connect-node']);
  for (const [name, version] of Object.entries(peers)) expect(version).toBe(pkg.dependencies[name] ?? pkg.devDependencies[name]);
});
