/**
 * `cfs profile create|list|use|delete`: named profiles in the config file (config.ts), all by flags
 * so CI can script them. A profile authenticates with a user's token (`--token`, or `--name` and
 * `--password` to sign in now and keep the token, never the password) or a service account's key
 * file (`--key-file`, exchanged and refreshed by the SDK on every run).
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { stringValue, type Command } from './command.js';
import { writeConfig, type Profile } from './config.js';
import { EXIT, print, UsageError } from './output.js';
import { readKeyFile, signIn } from './iam.js';
import { stringify } from 'yaml';

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

function nameOf(positionals: string[], verb: string): string {
  const [name, ...extra] = positionals;
  if (!name) throw new UsageError(`the profile name is required: cfs profile ${verb} <name>`);
  if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
  if (!NAME.test(name)) throw new UsageError(`a profile name is letters, digits, ".", "_" and "-" (at most 63), got "${name}"`);
  return name;
}

export const profileCommands: Command[] = [
  {
    words: ['profile', 'create'],
    args: '<name>',
    summary:
      'Creates (or with --force replaces) a profile: the server (--server, else CFS_SERVER, else http://localhost:8080), credentials (--token, --key-file, or --name and --password) and a default project. The first profile, or any with --use, becomes the current one. The config file is $XDG_CONFIG_HOME/cfs/config.yaml (else ~/.config/cfs/config.yaml, or CFS_CONFIG), mode 0600.',
    options: {
      'key-file': { type: 'string', placeholder: 'PATH', describe: 'authenticate as a service account with this key file ("cfs iam key generate")' },
      name: { type: 'string', placeholder: 'USER', describe: 'sign this user in now and keep the token (with --password)' },
      password: { type: 'string', placeholder: 'PASSWORD', describe: "the user's password (not stored)" },
      project: { type: 'string', placeholder: 'PROJECT_ID', describe: 'the default parent of instances and service accounts' },
      use: { type: 'boolean', describe: 'make it the current profile' },
      force: { type: 'boolean', describe: 'replace an existing profile of that name' },
    },
    async run({ values, positionals, session }) {
      const name = nameOf(positionals, 'create');
      const config = session.cliConfig;
      if (config.profiles[name] && !values.force) throw new UsageError(`profile "${name}" exists (--force replaces it)`);
      const server = (stringValue(values.server) ?? (session.env.CFS_SERVER || undefined) ?? 'http://localhost:8080').replace(/\/+$/, '');
      const profile: Profile = { server };
      const keyFile = stringValue(values['key-file']);
      const token = stringValue(values.token);
      const user = stringValue(values.name);
      if ([keyFile, token, user].filter((given) => given !== undefined).length > 1)
        throw new UsageError('give one of --token, --key-file, or --name with --password');
      if (keyFile !== undefined) {
        const path = resolve(keyFile);
        if (!existsSync(path)) throw new UsageError(`no key file at ${path}`);
        readKeyFile(path);
        profile.auth = { key_file: path };
      } else if (token !== undefined) {
        profile.auth = { token };
      } else if (user !== undefined) {
        const password = stringValue(values.password);
        if (password === undefined) throw new UsageError('--name needs --password');
        profile.auth = { token: await signIn(server, user, password) };
      }
      const project = stringValue(values.project);
      if (project !== undefined) profile.project = project;
      config.profiles[name] = profile;
      if (values.use || config.current === undefined || !config.profiles[config.current]) config.current = name;
      writeConfig(session.configPath, config);
      print(`profile "${name}" ${config.current === name ? 'created and in use' : 'created'}`);
      return EXIT.ok;
    },
  },
  {
    words: ['profile', 'list'],
    summary: 'Lists the profiles: name, whether current, server, how it authenticates, default project. Tokens are never printed.',
    options: {},
    async run({ session }) {
      const config = session.cliConfig;
      const rows = Object.entries(config.profiles).map(([name, profile]) => ({
        name,
        current: name === config.current,
        server: profile.server,
        auth: profile.auth?.key_file ? `key file ${profile.auth.key_file}` : profile.auth?.token ? 'token' : 'none',
        project: profile.project ?? '',
      }));
      const format = session.format;
      if (format === 'json') print(JSON.stringify(rows, null, 2));
      else if (format === 'yaml') print(rows.length === 0 ? '[]' : stringify(rows));
      else {
        const table = [['', 'NAME', 'SERVER', 'AUTH', 'PROJECT'], ...rows.map((row) => [row.current ? '*' : '', row.name, row.server, row.auth, row.project])];
        const widths = table[0]?.map((_, column) => Math.max(...table.map((row) => (row[column] ?? '').length))) ?? [];
        print(
          table
            .map((row) =>
              row
                .map((cell, column) => cell.padEnd(widths[column] ?? 0))
                .join('  ')
                .trimEnd(),
            )
            .join('\n'),
        );
      }
      return EXIT.ok;
    },
  },
  {
    words: ['profile', 'use'],
    args: '<name>',
    summary: 'Makes a profile the current one.',
    options: {},
    async run({ positionals, session }) {
      const name = nameOf(positionals, 'use');
      const config = session.cliConfig;
      if (!config.profiles[name]) throw new UsageError(`no profile "${name}" (see "cfs profile list")`);
      config.current = name;
      writeConfig(session.configPath, config);
      print(`profile "${name}" in use`);
      return EXIT.ok;
    },
  },
  {
    words: ['profile', 'delete'],
    args: '<name>',
    summary: 'Deletes a profile; when it was the current one, no profile is current afterwards.',
    options: {},
    async run({ positionals, session }) {
      const name = nameOf(positionals, 'delete');
      const config = session.cliConfig;
      if (!config.profiles[name]) throw new UsageError(`no profile "${name}" (see "cfs profile list")`);
      delete config.profiles[name];
      if (config.current === name) delete config.current;
      writeConfig(session.configPath, config);
      print(`profile "${name}" deleted`);
      return EXIT.ok;
    },
  },
];
