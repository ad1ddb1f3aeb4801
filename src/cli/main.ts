/**
 * `cfs`, the command-line client of the cloud API (docs/cloud-api.md "cfs", docs/iam.md): profiles,
 * every resource service's verbs (generated from the protos), operations, IAM sign-in, keys and
 * the token exchange, shell completion. It calls the server through the SDK layer (src/sdk):
 * retries, idempotency keys, waiting, token refresh. bin/cfs.js runs this file compiled and
 * bundled (scripts/build-cli.mjs), so a call starts in a fraction of a second.
 */
import { parseArgs } from 'node:util';
import { type Command, type Values, GLOBAL_OPTIONS, Session, generatedHelp } from './command.js';
import { bashCompletion, profileNames, zshCompletion } from './completion.js';
import { ConfigError } from './config.js';
import { iamCommands } from './iam.js';
import { describeError, EXIT, exitCodeOf, print, UsageError } from './output.js';
import { profileCommands } from './profile.js';
import { resourceCommands } from './resources.js';
import { webhooksCommand } from './webhooks.js';

/**
 * Every command. To add a command group, write it in its own file as a `Command[]` (command.ts has
 * the shape; profile.ts is a small example) and list it here: help, parsing, the session (profile,
 * server, credentials, output format), errors, exit codes and shell completion come with it.
 */
const COMMANDS: Command[] = [
  ...iamCommands,
  ...profileCommands,
  ...resourceCommands().filter((generated) => !iamCommands.some((handWritten) => handWritten.words.join(' ') === generated.words.join(' '))),
  ...webhookCommands(),
  {
    words: ['completion'],
    args: 'bash|zsh',
    summary:
      'Prints a shell completion script: source <(cfs completion bash), or for zsh source <(cfs completion zsh). (The scripts run "cfs completion profiles" for the profile names.)',
    options: {},
    async run({ positionals }) {
      const shell = positionals[0];
      if (shell === 'bash') print(bashCompletion(COMMANDS));
      else if (shell === 'zsh') print(zshCompletion(COMMANDS));
      else if (shell === 'profiles') {
        const names = profileNames();
        if (names !== '') print(names);
      } else throw new UsageError('cfs completion bash|zsh');
      return EXIT.ok;
    },
  },
];

/**
 * `cfs webhooks listen|replay` (src/cli/webhooks.ts): the webhook inspector's client side. The server
 * comes from the session (--server, the profile, CFS_SERVER) like every other command's.
 */
function webhookCommands(): Command[] {
  const server = (session: { server: string }) => ['--server', session.server];
  return [
    {
      words: ['webhooks', 'listen'],
      args: '<route id or URL>',
      summary:
        'Forwards every capture of a webhook route to a local URL, in order, resuming after the last one delivered (after a disconnect, and across runs: a checkpoint per route and target).',
      options: {
        'forward-to': { type: 'string', placeholder: 'URL', describe: 'where to send each capture (the route sub-path is appended)' },
        since: {
          type: 'string',
          placeholder: 'CAPTURE-ID',
          describe: 'start after this capture (not it), instead of after the last one delivered to this target before, or now',
        },
      },
      run: ({ values, positionals, session }) =>
        webhooksCommand([
          'listen',
          ...positionals,
          ...server(session),
          ...(typeof values['forward-to'] === 'string' ? ['--forward-to', values['forward-to']] : []),
          ...(typeof values.since === 'string' ? ['--since', values.since] : []),
        ]),
    },
    {
      words: ['webhooks', 'replay'],
      args: '<route id or URL> <capture id>',
      summary: 'Sends one captured request again to a URL, byte for byte.',
      options: { to: { type: 'string', placeholder: 'URL', describe: 'where to send the capture' } },
      run: ({ values, positionals, session }) =>
        webhooksCommand(['replay', ...positionals, ...server(session), ...(typeof values.to === 'string' ? ['--to', values.to] : [])]),
    },
  ];
}

/** Global options that take a value: skipped while looking for the command words. */
const VALUE_OPTIONS = new Set(Object.entries(GLOBAL_OPTIONS).flatMap(([name, option]) => (option.type === 'string' ? [`--${name}`] : [])));

/** The leading words of argv (global options may stand between them), up to the first other option. */
function leadingWords(argv: string[]): string[] {
  const words: string[] = [];
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index] ?? '';
    if (VALUE_OPTIONS.has(arg)) index++;
    else if (arg.startsWith('-')) {
      if (arg.includes('=') && VALUE_OPTIONS.has(arg.slice(0, arg.indexOf('=')))) continue;
      if (arg === '-h' || arg === '--help') continue;
      break;
    } else words.push(arg);
  }
  return words;
}

/** The command the words name (the longest match). */
function findCommand(words: string[]): Command | undefined {
  let best: Command | undefined;
  for (const command of COMMANDS) {
    if (command.words.length <= words.length && command.words.every((word, index) => words[index] === word) && command.words.length > (best?.words.length ?? 0))
      best = command;
  }
  return best;
}

function overview(): string {
  const groups = new Map<string, Command[]>();
  for (const command of COMMANDS) {
    const group = command.words.length > 2 ? command.words.slice(0, 2).join(' ') : (command.words[0] ?? '');
    groups.set(group, [...(groups.get(group) ?? []), command]);
  }
  const lines = [...groups].map(([group, commands]) => {
    if (commands.length === 1 && commands[0]) return `  ${commands[0].words.join(' ').padEnd(34)} ${firstSentence(commands[0].summary)}`;
    return `  ${`${group} ${commands.length > 1 && commands.every((command) => command.words.length > group.split(' ').length) ? `{${commands.map((command) => command.words.slice(group.split(' ').length).join(' ')).join('|')}}` : ''}`}`;
  });
  return `Usage: cfs <command> [options]

Commands:
${lines.join('\n')}

Run "cfs <command> --help" for a command's options.

Common options:
  --profile NAME   the profile to use (env CFS_PROFILE; default: the current one, see "cfs profile")
  --server URL     the server (env CFS_SERVER; default: the profile's, else http://localhost:8080)
  --token TOKEN    the bearer token (env CFS_TOKEN; default: the profile's credentials)
  --format FORMAT  json, yaml or table (default: table on a terminal, JSON when piped)
  --help           this help

Exit codes: 0 done, 1 failed, 2 usage, 3 wait timed out, 4 not found, 5 permission denied or
unauthenticated, 6 server unavailable.`;
}

function firstSentence(text: string): string {
  const end = text.search(/[.:](\s|$)/);
  return end < 0 ? text : text.slice(0, end);
}

async function run(argv: string[]): Promise<number> {
  const words = leadingWords(argv);
  const command = findCommand(words);
  const wantsHelp = argv.includes('--help') || argv.includes('-h');
  if (!command) {
    if (words.length === 0) {
      print(overview());
      return wantsHelp ? EXIT.ok : EXIT.usage;
    }
    const known = COMMANDS.filter((candidate) => candidate.words.slice(0, words.length).join(' ') === words.join(' '));
    if (known.length > 0 || wantsHelp) {
      print(
        known.length > 0
          ? `Usage: cfs ${words.join(' ')} <${[...new Set(known.map((candidate) => candidate.words[words.length]))].join('|')}> [options]`
          : overview(),
      );
      return wantsHelp ? EXIT.ok : EXIT.usage;
    }
    throw new UsageError(`unknown command "${words.join(' ')}"; run "cfs --help"`);
  }
  if (wantsHelp) {
    print(command.help ?? generatedHelp(command));
    return EXIT.ok;
  }
  const options = { ...GLOBAL_OPTIONS, ...command.options };
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: Object.fromEntries(
      Object.entries(options).map(([name, option]) => [
        name,
        { type: option.type, ...(option.multiple ? { multiple: true } : {}), ...(option.short ? { short: option.short } : {}) },
      ]),
    ),
  });
  const session = new Session(values as Values);
  try {
    return await command.run({ values: values as Values, positionals: positionals.slice(command.words.length), session });
  } finally {
    session.close();
  }
}

try {
  process.exitCode = await run(process.argv.slice(2));
} catch (error) {
  const usage = error instanceof ConfigError ? new UsageError(error.message) : error;
  process.stderr.write(`${describeError(usage)}\n`);
  process.exitCode = exitCodeOf(usage);
}
