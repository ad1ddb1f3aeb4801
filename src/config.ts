import { RULES, withDerivedDefaults } from './settings/rules.js';
import { SETTINGS, type Family, type Setting } from './settings/table.js';

export { ConfigError } from './settings/kinds.js';

type Table = typeof SETTINGS;

/**
 * Configuration comes from the environment only and is validated once at start: a malformed value
 * stops the process with a message naming the variable, rather than failing later mid-request. Each
 * variable is declared once, in src/settings/table.ts; this type is read off that table.
 */
export type Config = { [K in keyof Table]: Table[K]['default'] };

type Env = Record<string, string | undefined>;

/** Reads and validates every variable the server knows; unknown values for known names are errors. */
export function loadConfig(env: Env = process.env): Config {
  const config = readSettings(env);
  for (const rule of RULES) rule(config);
  return withDerivedDefaults(config);
}

/** Each setting on its own: its variable parsed when set (an empty value counts as unset), else its default. */
function readSettings(env: Env): Config {
  const entries = Object.entries(SETTINGS).map(([key, setting]: [string, Setting<unknown>]) => {
    const raw = env[setting.env];
    // A copy, so that no configuration shares a mutable default (CORS_ORIGINS's list) with another.
    return [key, raw === undefined || raw === '' ? structuredClone(setting.default) : setting.parse(raw)];
  });
  return Object.fromEntries(entries) as Config;
}

type KeyOf<F extends Family> = { [K in keyof Table]: Table[K]['family'] extends F ? K : never }[keyof Table];

/** The settings of one family (src/settings/table.ts): what a service of that part of the server is given. */
export type Settings<F extends Family> = Pick<Config, KeyOf<F>>;

/** The slice of `config` a service of `family` is given, so that it cannot come to depend on another part's settings. */
export function settingsOf<F extends Family>(config: Config, family: F): Settings<F> {
  const keys = Object.keys(SETTINGS).filter((key) => SETTINGS[key as keyof Table].family === family) as Array<KeyOf<F>>;
  return Object.fromEntries(keys.map((key) => [key, config[key]])) as Settings<F>;
}
