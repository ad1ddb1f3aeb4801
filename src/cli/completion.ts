/**
 * `cfs completion bash|zsh`: a completion script generated from the command table, so it always
 * knows every command and option this build has. Words complete command by command; once a command
 * is complete, its options (and the common ones); `--format` completes its values.
 */
import type { Command } from './command.js';
import { GLOBAL_OPTIONS } from './command.js';
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

function caseArms(table: Map<string, string[]>, indent: string): string {
  return [...table].map(([key, words]) => `${indent}${JSON.stringify(key)}) opts=${JSON.stringify(words.join(' '))} ;;`).join('\n');
}

export function bashCompletion(commands: Command[]): string {
  return `# bash completion for cfs: source <(cfs completion bash), or save it under /etc/bash_completion.d/
_cfs() {
  local cur prev cmdpath opts i
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  if [[ "$prev" == "--format" ]]; then
    COMPREPLY=( $(compgen -W ${JSON.stringify(FORMATS.join(' '))} -- "$cur") )
    return
  fi
  cmdpath=""
  for (( i=1; i<COMP_CWORD; i++ )); do
    [[ "\${COMP_WORDS[i]}" == -* ]] && break
    cmdpath="\${cmdpath:+$cmdpath }\${COMP_WORDS[i]}"
  done
  case "$cmdpath" in
${caseArms(completionTable(commands), '    ')}
    *) opts="" ;;
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
  local cmdpath="" opts="" i
  if [[ "\${words[CURRENT-1]}" == "--format" ]]; then
    compadd -- ${FORMATS.join(' ')}
    return
  fi
  for (( i=2; i<CURRENT; i++ )); do
    [[ "\${words[i]}" == -* ]] && break
    cmdpath="\${cmdpath:+$cmdpath }\${words[i]}"
  done
  case "$cmdpath" in
${caseArms(completionTable(commands), '    ')}
    *) opts="" ;;
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
