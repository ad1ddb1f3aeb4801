// `npm run lockfile:platforms`: records in package-lock.json the platform builds of optional native
// packages (@bufbuild/buf-*, @unrs/resolver-binding-*) that the registry mirror here does not carry.
// npm 11 cannot record what it cannot fetch, and `npm ci` then refuses the lockfile on every machine
// ("Missing: @bufbuild/buf-darwin-arm64@ from lock file", npm/cli#8805, #9083). Each entry is what
// npm writes on a machine that sees the package: version, os/cpu(/libc), optional — so `npm ci`
// accepts the lockfile and skips every build that is not for the running platform. The integrity
// hash is unknown here, so it is left out (npm then trusts the registry's tarball for those builds).
// Run it after any `npm install` that rewrites package-lock.json; it only adds missing entries.
import { readFileSync, writeFileSync } from 'node:fs';

const OS = { darwin: 'darwin', linux: 'linux', win32: 'win32', android: 'android', freebsd: 'freebsd', openharmony: 'openharmony' };
const CPU = {
  arm64: 'arm64',
  aarch64: 'arm64',
  x64: 'x64',
  ia32: 'ia32',
  arm: 'arm',
  armv7: 'arm',
  loong64: 'loong64',
  ppc64: 'ppc64',
  riscv64: 'riscv64',
  s390x: 's390x',
};

/** os, cpu and libc from a platform package's name (`…-linux-arm64-musl`, `…-win32-x64-msvc`). */
function platformOf(name) {
  const parts = name.split('/').pop().split('-');
  const osIndex = parts.findIndex((part) => part in OS);
  const cpu = parts.slice(osIndex + 1).find((part) => part in CPU);
  if (osIndex < 0 || !cpu) throw new Error(`cannot tell the platform of ${name}: add its entry to package-lock.json by hand`);
  const platform = { os: [OS[parts[osIndex]]], cpu: [CPU[cpu]] };
  if (platform.os[0] === 'linux') {
    const rest = parts.slice(osIndex + 1).join('-');
    if (/musl/.test(rest)) platform.libc = ['musl'];
    else if (/gnu/.test(rest)) platform.libc = ['glibc'];
  }
  return platform;
}

const path = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(path, 'utf8'));
const packages = lock.packages;
const added = [];
for (const [location, entry] of Object.entries(packages)) {
  const optional = Object.entries(entry.optionalDependencies ?? {});
  // A build of the same parent that npm did record gives the fields all builds share (license, engines).
  const sibling = optional.map(([name]) => packages[`node_modules/${name}`] ?? packages[`${location}/node_modules/${name}`]).find(Boolean);
  for (const [name, version] of optional) {
    // Installed builds are hoisted to the top level, where npm would place them.
    const top = `node_modules/${name}`;
    if (packages[top] || packages[`${location}/node_modules/${name}`]) continue;
    const { os, cpu, libc } = platformOf(name);
    packages[top] = {
      version,
      cpu,
      ...(entry.dev ? { dev: true } : {}),
      ...(libc ? { libc } : {}),
      ...(sibling?.license ? { license: sibling.license } : {}),
      optional: true,
      os,
      ...(sibling?.engines ? { engines: sibling.engines } : {}),
    };
    added.push(`${name}@${version}`);
  }
}
if (added.length > 0) {
  // npm keeps the entries sorted by location; keep the file as npm would write it.
  const [root, ...rest] = Object.keys(packages);
  const sorted = [root, ...rest.sort((a, b) => a.localeCompare(b, 'en'))];
  lock.packages = Object.fromEntries(sorted.map((key) => [key, packages[key]]));
  writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
}
console.log(added.length > 0 ? `added ${added.length} platform package(s): ${added.join(', ')}` : 'package-lock.json already records every platform package');
