import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * The seeded sandbox kept between starts (issue 32: ready in under 2 s): the first start seeds
 * through the APIs and dumps the store (PGlite `dumpDataDir` after a CHECKPOINT, the seed snapshot
 * included, as an uncompressed archive); later starts unpack that dump instead of the bare template
 * and seeding again. Only the newest dump is kept (each is ~40 MB). Keyed by everything the
 * seed depends on — the migrated template, the seed's own code, the credentials — so a new release,
 * a changed seed or other ADMIN_* / SUPERUSER_* values seed afresh. A day old, it is made again
 * (the seeded webhook route and tokens age). `--fresh` ignores it.
 */
export interface SandboxCredentials {
  admin: { name: string; password: string };
  superuser: { email: string; password: string };
}

const MAX_AGE_MS = 24 * 60 * 60 * 1000;

/** `SANDBOX_CACHE_DIR`, else `$XDG_CACHE_HOME/cfs-server-sandbox` (`~/.cache/…`). */
export function cacheDirOf(env: NodeJS.ProcessEnv): string {
  return env.SANDBOX_CACHE_DIR ?? join(env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'cfs-server-sandbox');
}

/**
 * The default credentials of this machine's sandbox: made once (random passwords) and kept in the
 * cache, so the seeded dump made with them is reused; without a usable cache, new ones each start.
 */
export function defaultCredentials(dir: string | undefined): SandboxCredentials {
  const made: SandboxCredentials = {
    admin: { name: 'admin', password: randomBytes(12).toString('base64url') },
    superuser: { email: 'superuser@example.com', password: randomBytes(12).toString('base64url') },
  };
  if (!dir) return made;
  const file = join(dir, 'credentials.json');
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as SandboxCredentials;
  } catch {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      writeFileSync(file, `${JSON.stringify(made, null, 2)}\n`, { mode: 0o600 });
    } catch {
      // An unwritable cache only costs the next start its speed.
    }
    return made;
  }
}

/** The cache key of a seeded dump: the template's digest (templateDigest), the seed's code, the credentials. */
export function seedKey(templateDigest: string, seedCode: string, credentials: SandboxCredentials): string {
  return createHash('sha256').update(templateDigest).update('\0').update(seedCode).update('\0').update(JSON.stringify(credentials)).digest('hex').slice(0, 24);
}

/** The path of a seeded dump and what the seed made, when the cache has a fresh one for `key`. */
export function readSeeded<State>(dir: string, key: string): { dump: string; state: State } | undefined {
  try {
    const dumpFile = join(dir, `${key}.tar`);
    if (Date.now() - statSync(dumpFile).mtimeMs > MAX_AGE_MS) return undefined;
    const state = JSON.parse(readFileSync(join(dir, `${key}.json`), 'utf8')) as State;
    return { dump: dumpFile, state };
  } catch {
    return undefined;
  }
}

/** A kept dump (or its state) of another key: another release, seed or credentials; or a gzip'd one of earlier releases. */
const isOtherSeed = (name: string, key: string) => /^[0-9a-f]{24}\.(tar|tar\.gz|json)$/.test(name) && !name.startsWith(`${key}.`);

/**
 * Keeps a seeded dump (written under temporary names and renamed: a reader never sees half of one)
 * and removes those of other keys.
 */
export function writeSeeded(dir: string, key: string, dump: Buffer, state: unknown): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    for (const name of readdirSync(dir)) if (isOtherSeed(name, key)) rmSync(join(dir, name), { force: true });
    for (const [name, content] of [
      [`${key}.json`, `${JSON.stringify(state)}\n`],
      [`${key}.tar`, dump],
    ] as const) {
      const temporary = join(dir, `${name}.${process.pid}`);
      writeFileSync(temporary, content, { mode: 0o600 });
      renameSync(temporary, join(dir, name));
    }
  } catch {
    // As above: no cache, no harm.
  }
}
