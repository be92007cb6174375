/**
 * The scripts `berth completion bash|zsh` prints. They stay small and know nothing of berth's
 * commands: at each TAB they hand the words of the line to `berth __complete -- WORDS…` (as
 * kubectl's do with cobra's `__complete`) and offer what it prints (lines.ts).
 */

export const SHELLS = ['bash', 'zsh'] as const;
export type Shell = (typeof SHELLS)[number];

const BASH = `# bash completion for berth: source <(berth completion bash)
# or, for every shell: berth completion bash > ~/.local/share/bash-completion/completions/berth
# Candidates come from berth itself (berth __complete -- WORDS...).

_berth_complete() {
    local rest=\${COMP_LINE:0:COMP_POINT} word cur stem prog out glued i
    local -a words=() lines=()
    # Bash breaks words at = and : (COMP_WORDBREAKS); berth reads --project=ml as one word, so
    # words that touch on the line are joined again. Readline replaces only the text after the
    # last break: what comes before it (the stem, "--project=") is cut from each candidate.
    for ((i = 0; i <= COMP_CWORD; i++)); do
        word=\${COMP_WORDS[i]}
        glued=$((i > 0))
        if [[ $rest =~ ^[[:space:]]+ ]]; then
            rest=\${rest:\${#BASH_REMATCH[0]}}
            glued=0
        fi
        ((i == COMP_CWORD)) && word=\${word:0:\${#rest}}
        rest=\${rest:\${#word}}
        if ((glued)); then words[-1]+=$word; else words+=("$word"); fi
    done
    cur=\${words[-1]##*["$COMP_WORDBREAKS"]}
    stem=\${words[-1]:0:\${#words[-1]}-\${#cur}}
    prog=\${COMP_WORDS[0]}
    [[ $prog == "~/"* ]] && prog=$HOME/\${prog:2}
    out=$("$prog" __complete -- "\${words[@]:1}" 2>/dev/null) || return 0
    mapfile -t lines <<<"$out"
    COMPREPLY=()
    for word in "\${lines[@]}"; do
        case $word in
        :files) ((\${#COMPREPLY[@]})) || compopt -o default 2>/dev/null ;;
        :* | '') ;;
        *) word=\${word%%$'\\t'*} && COMPREPLY+=("\${word:\${#stem}}") ;;
        esac
    done
    return 0
}
complete -o nosort -F _berth_complete berth 2>/dev/null || complete -F _berth_complete berth
`;

const ZSH = `#compdef berth
compdef _berth berth

# zsh completion for berth: source <(berth completion zsh) after compinit,
# or, for every shell: berth completion zsh > "\${fpath[1]}/_berth"
# Candidates come from berth itself (berth __complete -- WORDS...).

_berth() {
  local -a lines candidates
  local line value prog=\${words[1]}
  [[ $prog == '~/'* ]] && prog=$HOME/\${prog#??}
  lines=("\${(@f)$("$prog" __complete -- "\${(@)words[2,CURRENT]}" 2>/dev/null)}")
  for line in "\${(@)lines[1,-2]}"; do
    # VALUE<TAB>DESCRIPTION becomes VALUE:DESCRIPTION, _describe's form (a colon in VALUE escaped).
    value=\${\${line%%$'\\t'*}//:/\\\\:}
    if [[ $line == *$'\\t'* ]]; then
      candidates+=("$value:\${line#*$'\\t'}")
    else
      candidates+=("$value")
    fi
  done
  if (( \${#candidates} )); then
    _describe -V berth candidates
  elif [[ \${lines[-1]} == :files ]]; then
    _files
  fi
}

# Autoloaded from $fpath, this file is the function's body: complete now. Sourced: only define it.
if [[ \${funcstack[1]} == _berth ]]; then
  _berth "$@"
fi
`;

export const completionScript = (shell: Shell): string => (shell === 'bash' ? BASH : ZSH);
