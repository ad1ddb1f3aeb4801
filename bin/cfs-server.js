#!/usr/bin/env node
// `cfs-server [command]`: the compiled server's commands (npm run build writes dist/). Each runs in
// this very process (no child: in a container node stays PID 1 and receives docker's SIGTERM), with
// the command's own arguments after it. A new command is one more entry in COMMANDS.
const COMMANDS = {
  start: { module: 'dist/src/main.js', summary: 'serve every API on PORT (the default command)' },
  migrate: { module: 'dist/src/tools/migrate.js', summary: 'run the pending database migrations and exit (a Kubernetes Job or init container)' },
  sandbox: { module: 'dist/src/sandbox/main.js', summary: 'the whole server in memory, seeded, for client teams (`sandbox reset` restores the seed)' },
};

function usage() {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length));
  const lines = Object.entries(COMMANDS).map(([name, { summary }]) => `  ${name.padEnd(width)}  ${summary}`);
  return `usage: cfs-server [command]\n\ncommands:\n${lines.join('\n')}\n\nConfiguration comes from the environment (README.md, Configuration).\n`;
}

const [name = 'start'] = process.argv.slice(2);
if (name === 'help' || name === '--help' || name === '-h') {
  process.stdout.write(usage());
} else if (!Object.hasOwn(COMMANDS, name)) {
  process.stderr.write(`cfs-server: unknown command "${name}"\n${usage()}`);
  process.exitCode = 2;
} else {
  // The command sees its own arguments where it would when run directly: argv[2] onwards.
  process.argv.splice(2, 1);
  await import(new URL(`../${COMMANDS[name].module}`, import.meta.url).href);
}
