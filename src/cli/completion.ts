/**
 * `cfs completion bash|zsh`: a completion script generated from the command table, so it always
 * knows every command and option this build has. Words complete command by command — global
 * options (`--profile sa`, `--server URL`…) may stand before or between them — and once a command is
 * complete, its options (and the common ones). Values complete too: `--format`, every enum option
 * (`--recovery-policy`), and profile names for `--profile` and `cfs profile use|delete`, read from
 * the config at the moment of completion (`cfs completion profiles`).
 */
import type { Command } from './command.js';
import { GLOBAL_OPTIONS } from './command.js';
import { configPath, readConfig } from './config.js';
import { FORMATS } from './output.js';

/** For every command prefix ("", "compute", "compute instance"…), the words that may follow; for every command, its options. */
function completionTable(commands: Command[]): Map<string, string[]> {
  const table = new Map<string, Set<string>>();
  const add = (key: string, word: string) => {
    if (!table.has(key)) table.set(key, new Set());
    table.get(key)?.add(word);
  };
  const globals = Object.keys(GLOBAL_OPTIONS).map((name) => `--${name}`);
  for (const command of commands) {
    for (let depth = 0; depth < command.words.length; depth++) add(command.words.slice(0, depth).join(' '), command.words[depth] ?? '');
    for (const option of [...Object.keys(command.options).map((name) => `--${name}`), ...globals]) add(command.words.join(' '), option);
  }
  return new Map([...table].sort(([a], [b]) => a.localeCompare(b)).map(([key, words]) => [key, [...words].sort()]));
}

/** The values of options with a fixed set (enums, whose placeholder lists them as A|B|C), per "<command>|--option". */
function valueTable(commands: Command[]): Map<string, string[]> {
  const table = new Map<string, string[]>();
  for (const command of commands) {
    for (const [name, option] of Object.entries(command.options)) {
      if (option.type !== 'string' || !option.placeholder || !/^[A-Za-z0-9_]+(\|[A-Za-z0-9_]+)+$/.test(option.placeholder)) continue;
      table.set(`${command.words.join(' ')}|--${name}`, option.placeholder.split('|'));
    }
  }
  return new Map([...table].sort(([a], [b]) => a.localeCompare(b)));
}

/** The commands whose positional argument is a profile name. */
const PROFILE_ARGUMENT = ['profile use', 'profile delete'];

/** Global options that take a value: they and their value are skipped while reading the command words. */
const GLOBAL_VALUE_OPTIONS = Object.entries(GLOBAL_OPTIONS).flatMap(([name, option]) => (option.type === 'string' ? [`--${name}`] : []));

function caseArms(table: Map<string, string[]>, indent: string, variable = 'opts'): string {
  return [...table].map(([key, words]) => `${indent}${JSON.stringify(key)}) ${variable}=${JSON.stringify(words.join(' '))} ;;`).join('\n');
}

/** Every command path and prefix, as `|a|a b|…|`: a word extends the path only into one of these. */
function knownPaths(commands: Command[]): string {
  return `|${[...completionTable(commands).keys()].filter((key) => key !== '').join('|')}|`;
}

/** `cfs completion profiles`: the profile names, one a line (nothing when there is no config). */
export function profileNames(): string {
  try {
    return Object.keys(readConfig(configPath()).profiles).sort().join('\n');
  } catch {
    return '';
  }
}

/**
 * The shell loop (bash and zsh alike) that reads the command words typed before the cursor into
 * `cmdpath`: global options and their values may stand before or between them; the first other
 * option, or a word that extends no known path (a positional such as an id), ends them.
 */
function commandWordsLoop(start: string, cursor: string, words: string): string {
  return `  for (( ${start}; i<${cursor}; i++ )); do
    word="\${${words}[i]}"
    # bash splits --option=value at "=" (COMP_WORDBREAKS): the value comes after it.
    if (( skip )); then [[ "$word" == "=" ]] || skip=0; continue; fi
    case "$word" in
      ${GLOBAL_VALUE_OPTIONS.join('|')}) skip=1; continue ;;
      ${GLOBAL_VALUE_OPTIONS.map((option) => `${option}=*`).join('|')}) continue ;;
      -*) stop=1; continue ;;
    esac
    (( stop )) && continue
    candidate="\${cmdpath:+$cmdpath }$word"
    if [[ "$known" == *"|$candidate|"* ]]; then cmdpath="$candidate"; else stop=1; fi
  done`;
}

export function bashCompletion(commands: Command[]): string {
  return `# bash completion for cfs: source <(cfs completion bash), or save it under /etc/bash_completion.d/
_cfs() {
  local cur prev cmdpath opts values word candidate i skip=0 stop=0
  local known=${JSON.stringify(knownPaths(commands))}
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  # The command words: global options and their values may stand before or between them.
  cmdpath=""
${commandWordsLoop('i=1', 'COMP_CWORD', 'COMP_WORDS')}
  case "$prev" in
    --format) COMPREPLY=( $(compgen -W ${JSON.stringify(FORMATS.join(' '))} -- "$cur") ); return ;;
    --profile) COMPREPLY=( $(compgen -W "$("\${COMP_WORDS[0]}" completion profiles 2>/dev/null)" -- "$cur") ); return ;;
  esac
  values=""
  case "$cmdpath|$prev" in
${caseArms(valueTable(commands), '    ', 'values')}
  esac
  if [[ -n "$values" ]]; then COMPREPLY=( $(compgen -W "$values" -- "$cur") ); return; fi
  case "$cmdpath" in
${caseArms(completionTable(commands), '    ')}
    *) opts="" ;;
  esac
  case "$cmdpath" in
    ${PROFILE_ARGUMENT.map((path) => JSON.stringify(path)).join('|')}) [[ "$cur" == -* ]] || opts="$opts $("\${COMP_WORDS[0]}" completion profiles 2>/dev/null)" ;;
  esac
  COMPREPLY=( $(compgen -W "$opts" -- "$cur") )
}
complete -F _cfs cfs
`;
}

export function zshCompletion(commands: Command[]): string {
  return `#compdef cfs
# zsh completion for cfs: source <(cfs completion zsh), or save it as _cfs in a directory of $fpath
_cfs() {
  local cmdpath="" opts="" values="" word candidate prev="\${words[CURRENT-1]}" i skip=0 stop=0
  local known=${JSON.stringify(knownPaths(commands))}
${commandWordsLoop('i=2', 'CURRENT', 'words')}
  case "$prev" in
    --format) compadd -- ${FORMATS.join(' ')}; return ;;
    --profile) compadd -- \${(f)"$("\${words[1]}" completion profiles 2>/dev/null)"}; return ;;
  esac
  case "$cmdpath|$prev" in
${caseArms(valueTable(commands), '    ', 'values')}
  esac
  if [[ -n "$values" ]]; then compadd -- \${=values}; return; fi
  case "$cmdpath" in
${caseArms(completionTable(commands), '    ')}
    *) opts="" ;;
  esac
  case "$cmdpath" in
    ${PROFILE_ARGUMENT.map((path) => JSON.stringify(path)).join('|')}) [[ "\${words[CURRENT]}" == -* ]] || opts="$opts $("\${words[1]}" completion profiles 2>/dev/null)" ;;
  esac
  compadd -- \${=opts}
}
if [[ "\${zsh_eval_context[-1]}" == loadautofunc ]]; then
  _cfs "$@"
else
  compdef _cfs cfs
fi
`;
}
