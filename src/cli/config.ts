/**
 * `cfs` profiles: `$XDG_CONFIG_HOME/cfs/config.yaml` (else `~/.config/cfs/config.yaml`), like the
 * Nebius CLI's `~/.nebius/config.yaml`. A profile names a server, how to authenticate (a user's
 * sign-in token or a service account's key file) and a default project; one is current.
 *
 *   current: dev
 *   profiles:
 *     dev:
 *       server: http://localhost:8080
 *       auth: { token: eyJ… }              # or { key_file: /home/me/key.json }
 *       project: project-…
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse, stringify } from 'yaml';

export interface Profile {
  server: string;
  auth?: { token?: string; key_file?: string };
  project?: string;
}

export interface CliConfig {
  current?: string;
  profiles: Record<string, Profile>;
}

export class ConfigError extends Error {}

/** Where the config lives; undefined when neither XDG_CONFIG_HOME nor HOME is set. */
export function configPath(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.CFS_CONFIG) return env.CFS_CONFIG;
  const base = env.XDG_CONFIG_HOME || (env.HOME ? join(env.HOME, '.config') : undefined);
  return base ? join(base, 'cfs', 'config.yaml') : undefined;
}

export function readConfig(path: string | undefined): CliConfig {
  if (!path || !existsSync(path)) return { profiles: {} };
  let parsed: unknown;
  try {
    parsed = parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const config = (parsed ?? {}) as Partial<CliConfig>;
  if (typeof config !== 'object' || (config.profiles !== undefined && (typeof config.profiles !== 'object' || config.profiles === null))) {
    throw new ConfigError(`${path} is not a cfs config (expected "profiles:" and "current:")`);
  }
  return { current: typeof config.current === 'string' ? config.current : undefined, profiles: config.profiles ?? {} };
}

/** Written whole through a temporary file (a crash never leaves half a config), mode 0600: it may hold tokens. */
export function writeConfig(path: string | undefined, config: CliConfig): void {
  if (!path) throw new ConfigError('no place for the config: set XDG_CONFIG_HOME or HOME (or CFS_CONFIG)');
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, stringify(config), { mode: 0o600 });
  chmodSync(temporary, 0o600);
  renameSync(temporary, path);
}

/** The profile in effect: --profile, else CFS_PROFILE, else the current one; undefined when there is none. */
export function selectProfile(
  config: CliConfig,
  flag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): { name: string; profile: Profile } | undefined {
  const name = flag ?? (env.CFS_PROFILE || undefined) ?? config.current;
  if (name === undefined) return undefined;
  const profile = config.profiles[name];
  if (!profile) {
    if (flag !== undefined || env.CFS_PROFILE) throw new ConfigError(`no profile "${name}" (see "cfs profile list")`);
    return undefined;
  }
  return { name, profile };
}
