/**
 * The shape every `cfs` command has, and the session a command runs in: the profile, server,
 * credentials and output format resolved once from flags, environment and config, and an SDK
 * (src/sdk) built on first use.
 */
import { readFileSync } from 'node:fs';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { createCloudSdk, parseServiceAccountKey, type CloudSdk, type Credentials } from '../sdk/index.js';
import { configPath, readConfig, selectProfile, type CliConfig, type Profile } from './config.js';
import { resolveFormat, UsageError, type Format } from './output.js';

export interface OptionSpec {
  type: 'string' | 'boolean';
  multiple?: boolean;
  short?: string;
  /** Shown in help: what the value is. */
  placeholder?: string;
  describe?: string;
}

export type Values = Record<string, string | boolean | string[] | undefined>;

export interface Command {
  /** The words that name it: ['compute', 'instance', 'create']. */
  words: string[];
  summary: string;
  /** The whole --help text; generated from summary and options when absent. */
  help?: string;
  /** Positional arguments after the words, for help (e.g. "<operation-id>"). */
  args?: string;
  options: Record<string, OptionSpec>;
  run(context: CommandContext): Promise<number>;
}

export interface CommandContext {
  values: Values;
  /** Arguments after the command words. */
  positionals: string[];
  session: Session;
}

/** Options every command takes. */
export const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  profile: { type: 'string', placeholder: 'NAME', describe: 'the profile to use (env CFS_PROFILE; default: the current one)' },
  server: { type: 'string', placeholder: 'URL', describe: "the server (env CFS_SERVER; default: the profile's, else http://localhost:8080)" },
  token: { type: 'string', placeholder: 'TOKEN', describe: "the bearer token (env CFS_TOKEN; default: the profile's credentials)" },
  format: { type: 'string', placeholder: 'json|yaml|table', describe: 'output format (default: table on a terminal, JSON otherwise)' },
  help: { type: 'boolean', short: 'h', describe: 'this help' },
};

const DEFAULT_SERVER = 'http://localhost:8080';

export class Session {
  readonly configPath: string | undefined;
  private config: CliConfig | undefined;
  private sdkInstance: CloudSdk | undefined;

  constructor(
    readonly values: Values,
    readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.configPath = configPath(env);
  }

  get cliConfig(): CliConfig {
    this.config ??= readConfig(this.configPath);
    return this.config;
  }

  get profile(): { name: string; profile: Profile } | undefined {
    return selectProfile(this.cliConfig, stringValue(this.values.profile), this.env);
  }

  get server(): string {
    const server = stringValue(this.values.server) ?? (this.env.CFS_SERVER || undefined) ?? this.profile?.profile.server ?? DEFAULT_SERVER;
    return server.replace(/\/+$/, '');
  }

  get format(): Format {
    return resolveFormat(stringValue(this.values.format));
  }

  /** Whether --format was given (some old commands keep their plain-text output without it). */
  get formatGiven(): boolean {
    return this.values.format !== undefined;
  }

  /** The default project: the profile's. */
  get project(): string | undefined {
    return this.profile?.profile.project;
  }

  /** What calls authenticate with: --token, CFS_TOKEN, else the profile's token or key file; undefined when none. */
  credentials(): Credentials | undefined {
    const token = stringValue(this.values.token) ?? (this.env.CFS_TOKEN || undefined);
    if (token) return { token };
    const auth = this.profile?.profile.auth;
    if (auth?.token) return { token: auth.token };
    if (auth?.key_file) {
      let text: string;
      try {
        text = readFileSync(auth.key_file, 'utf8');
      } catch (error) {
        throw new UsageError(`cannot read the key file ${auth.key_file}: ${error instanceof Error ? error.message : String(error)}`);
      }
      return { serviceAccountKey: parseServiceAccountKey(text) };
    }
    return undefined;
  }

  requireCredentials(): void {
    if (!this.credentials())
      throw new UsageError('a token is required: --token or CFS_TOKEN, or a profile with credentials (see "cfs profile create", "cfs iam get-access-token")');
  }

  /** The SDK over gRPC with this session's credentials (or none: anonymous calls). */
  sdk(options: { anonymous?: boolean } = {}): CloudSdk {
    if (options.anonymous) return createCloudSdk({ baseUrl: this.server, transport: createGrpcTransport });
    this.sdkInstance ??= createCloudSdk({ baseUrl: this.server, transport: createGrpcTransport, credentials: this.credentials() });
    return this.sdkInstance;
  }

  close(): void {
    this.sdkInstance?.close();
  }
}

export function stringValue(value: Values[string]): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** The --help text of a command without a hand-written one. */
export function generatedHelp(command: Command): string {
  const flags = Object.entries(command.options).map(([name, option]) => {
    const left = `  --${name}${option.type === 'string' ? ` ${option.placeholder ?? 'VALUE'}` : ''}${option.multiple ? ' (repeatable)' : ''}`;
    return option.describe ? `${left.padEnd(36)} ${option.describe}` : left;
  });
  const globals = Object.entries(GLOBAL_OPTIONS).map(
    ([name, option]) => `  --${name}${option.type === 'string' ? ` ${option.placeholder ?? 'VALUE'}` : ''}`.padEnd(36) + ` ${option.describe ?? ''}`,
  );
  const [first, ...rest] = command.summary.split('\n\n');
  const usage = first?.startsWith('cfs ')
    ? [`Usage: ${first}`, `       cfs ${command.words.join(' ')}${command.args ? ` ${command.args}` : ''} [options]`, '', rest.join('\n\n')]
    : [`Usage: cfs ${command.words.join(' ')}${command.args ? ` ${command.args}` : ''} [options]`, '', command.summary];
  return [...usage, ...(flags.length > 0 ? ['', 'Options:', ...flags] : []), '', 'Common options:', ...globals].join('\n');
}
