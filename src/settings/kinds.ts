import { isAcceptablePassword, MIN_PASSWORD_LENGTH } from '../auth/password-rule.js';
import { parseTrustProxy, type TrustProxy } from '../services/client-address.js';

/** A malformed or contradictory setting: the process stops at start with this message, naming the variable. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * How one variable's text becomes a value: `parse` gets a non-empty value and throws a ConfigError
 * naming the variable; `allowed` and `show` are what README's configuration table prints.
 */
export interface Kind<T> {
  parse(raw: string, name: string): T;
  /** The values the variable accepts, as README says it (Markdown). */
  allowed: string;
  /** A value as README prints it (Markdown). */
  show(value: T): string;
}

const code = (value: string | number | boolean): string => `\`${value}\``;

/** A whole number within `min`…`max` (no sign, no unit, no fraction). */
export function integer(min: number, max: number): Kind<number> {
  return {
    parse(raw, name) {
      if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
      const value = Number(raw);
      if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
      return value;
    },
    allowed: `${min}–${max}`,
    show: code,
  };
}

/** An integer that is 0 (the feature is off) or at least `min` (smaller values make no sense), at most `max`. */
export function offOrInteger(min: number, max: number): Kind<number> {
  const whole = integer(0, max);
  return {
    parse(raw, name) {
      const value = whole.parse(raw, name);
      if (value !== 0 && value < min) throw new ConfigError(`${name} must be 0 (off) or at least ${min}, got ${value}`);
      return value;
    },
    allowed: `0 (off) or ${min}–${max}`,
    show: code,
  };
}

const DURATION_UNITS = { s: 1, m: 60, h: 3600, d: 86400 } as const;

/** A duration in whole seconds, written as seconds (`3600`) or with a unit (`90s`, `30m`, `12h`, `7d`); 1 s to 3650 days. */
export function duration(): Kind<number> {
  return {
    parse(raw, name) {
      const match = /^(\d+)([smhd]?)$/.exec(raw);
      if (!match) throw new ConfigError(`${name} must be seconds or a number with s, m, h or d (e.g. 7d), got "${raw}"`);
      const unit = match[2] ? DURATION_UNITS[match[2] as keyof typeof DURATION_UNITS] : 1;
      const value = Number(match[1]) * unit;
      if (value < 1 || value > 3650 * 86400) throw new ConfigError(`${name} must be between 1s and 3650d, got "${raw}"`);
      return value;
    },
    allowed: 'seconds, or a number with `s`, `m`, `h`, `d`; 1s–3650d',
    show: (seconds) => code(shortestDuration(seconds)),
  };
}

/** `604800` → `7d`, `43200` → `12h`: the largest unit that divides the seconds. */
function shortestDuration(seconds: number): string {
  for (const unit of ['d', 'h', 'm'] as const) {
    if (seconds % DURATION_UNITS[unit] === 0) return `${seconds / DURATION_UNITS[unit]}${unit}`;
  }
  return `${seconds}s`;
}

/** `true`/`1` or `false`/`0`. */
export function boolean(): Kind<boolean> {
  return {
    parse(raw, name) {
      if (raw === 'true' || raw === '1') return true;
      if (raw === 'false' || raw === '0') return false;
      throw new ConfigError(`${name} must be true or false, got "${raw}"`);
    },
    allowed: '`true`, `false`',
    show: code,
  };
}

/** One of a closed list of words. */
export function oneOf<const T extends string>(values: readonly T[]): Kind<T> {
  return {
    parse(raw, name) {
      if (!(values as readonly string[]).includes(raw)) throw new ConfigError(`${name} must be one of ${values.join(', ')}, got "${raw}"`);
      return raw as T;
    },
    allowed: values.map(code).join(', '),
    show: code,
  };
}

/** Any text, taken as it is (`allowed` says what it means: a path, a name…). */
export function text(allowed: string): Kind<string> {
  return { parse: (raw) => raw, allowed, show: code };
}

/** Text of a given shape; `problem` says what is wrong after the variable's name; `normalise` makes the value compared. */
function matching(shape: RegExp, allowed: string, problem: (raw: string) => string, normalise = (raw: string) => raw): Kind<string> {
  return {
    parse(raw, name) {
      if (!shape.test(raw)) throw new ConfigError(`${name} ${problem(raw)}`);
      return normalise(raw);
    },
    allowed,
    show: code,
  };
}

/** A `postgres://` or `postgresql://` connection URL. */
export function postgresUrl(): Kind<string> {
  return matching(/^postgres(ql)?:\/\//, '`postgres://…`', () => 'must be a postgres:// URL');
}

/** An `http(s)://` base URL; trailing slashes are dropped. */
export function httpUrl(): Kind<string> {
  return matching(
    /^https?:\/\/[^/\s]+(\/[^\s]*)?$/,
    '`http(s)://…`',
    (raw) => `must be an http(s) URL, got "${raw}"`,
    (raw) => raw.replace(/\/+$/, ''),
  );
}

/** A DNS name, compared lowercase. */
export function dnsName(): Kind<string> {
  return matching(
    /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i,
    'a DNS name',
    (raw) => `must be a DNS name (e.g. api.example.com), got "${raw}"`,
    (raw) => raw.toLowerCase(),
  );
}

/** An email address (the loose shape: something@something.tld). */
export function email(): Kind<string> {
  return matching(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, 'an email address', (raw) => `must be an email address, got "${raw}"`);
}

/** A bearer token: at least 16 printable ASCII characters, no spaces. */
export function bearerToken(): Kind<string> {
  return matching(/^[\x21-\x7e]{16,}$/, 'at least 16 printable characters, no spaces', () => 'must be at least 16 printable characters without spaces');
}

/** A password the accounts' own rule accepts (auth/password-rule.ts). */
export function password(): Kind<string> {
  return {
    parse(raw, name) {
      if (!isAcceptablePassword(raw)) throw new ConfigError(`${name} must be at least ${MIN_PASSWORD_LENGTH} characters`);
      return raw;
    },
    allowed: `at least ${MIN_PASSWORD_LENGTH} characters`,
    show: code,
  };
}

const ORIGIN = /^https?:\/\/[a-z0-9.-]+(:\d{1,5})?$|^https?:\/\/\[[0-9a-f:.]+\](:\d{1,5})?$/;

/** `*`, or a comma list of browser origins (`scheme://host[:port]`, no path), compared lowercase. */
export function originList(): Kind<string[]> {
  return {
    parse(raw, name) {
      const origins = raw
        .split(',')
        .map((origin) => origin.trim().toLowerCase())
        .filter((origin) => origin !== '');
      for (const origin of origins) {
        if (origin !== '*' && !ORIGIN.test(origin)) {
          throw new ConfigError(
            `${name} must be * or a comma list of origins like https://app.example.com (scheme, host, optional port, no path), got "${origin}"`,
          );
        }
      }
      if (origins.includes('*') && origins.length > 1) throw new ConfigError(`${name}: * allows every origin and cannot be combined with a list`);
      return origins;
    },
    allowed: '`*`, or a comma list of origins',
    show: (origins) => (origins.length === 0 ? '—' : code(origins.join(','))),
  };
}

/** A hop count or a comma list of CIDRs and the names loopback, private, linklocal; `false` = none (services/client-address.ts). */
export function trustedProxies(): Kind<TrustProxy | undefined> {
  return {
    parse(raw, name) {
      if (raw === 'false') return undefined;
      try {
        return parseTrustProxy(raw);
      } catch (error) {
        throw new ConfigError(
          `${name} must be a hop count (1, 2, …) or a comma list of CIDRs and the names loopback, private, linklocal: ${(error as Error).message}`,
        );
      }
    },
    allowed: 'a hop count (`1`…`64`), or a comma list of CIDRs and `loopback`, `private`, `linklocal`',
    show: () => '—',
  };
}
