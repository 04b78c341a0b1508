package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
)

const completionAbout = `
Print a completion script for SHELL (bash, zsh or fish). It completes
commands and subcommands from junction's command table, and a command's
flags by asking "junction COMMAND -help" as you type. Install it:

  bash:  junction completion bash > ~/.local/share/bash-completion/completions/junction
  fish:  junction completion fish > ~/.config/fish/completions/junction.fish
  zsh:   junction completion zsh > ~/.zfunc/_junction
         and fpath=(~/.zfunc $fpath) in ~/.zshrc, before compinit

or load it for the current bash: source <(junction completion bash).`

func runCompletion(_ context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "completion", "bash|zsh|fish", completionAbout)
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("completion needs one SHELL: bash, zsh or fish")
	}
	t := newCompletionTable(commands())
	switch fs.Arg(0) {
	case "bash":
		t.bash(env.Stdout)
	case "zsh":
		t.zsh(env.Stdout)
	case "fish":
		t.fish(env.Stdout)
	default:
		return usageErrorf("completion: unknown shell %q: use bash, zsh or fish", fs.Arg(0))
	}
	return nil
}

// completionWord is a word the shell can complete, with its summary.
type completionWord struct{ name, summary string }

// completionTable is the visible command table as words: the first word
// of every command, and the subcommands of every group.
type completionTable struct {
	top    []completionWord
	groups []string
	subs   map[string][]completionWord
}

func newCompletionTable(cmds []command) *completionTable {
	t := &completionTable{subs: map[string][]completionWord{}}
	seen := map[string]bool{}
	for _, c := range groupCommands(cmds, "") {
		first, sub, isGroup := strings.Cut(c.name, " ")
		if !seen[first] {
			seen[first] = true
			summary := c.summary
			if isGroup {
				summary = "the " + first + " commands"
				t.groups = append(t.groups, first)
			}
			t.top = append(t.top, completionWord{first, summary})
		}
		if isGroup {
			t.subs[first] = append(t.subs[first], completionWord{sub, c.summary})
		}
	}
	t.top = append(t.top, completionWord{"help", "help on a command"})
	return t
}

func words(ws []completionWord) string {
	names := make([]string, len(ws))
	for i, w := range ws {
		names[i] = w.name
	}
	return strings.Join(names, " ")
}

// flagLines is the shell pipeline that prints the flags of a command: the
// "  -name" lines of its -help.
const flagLines = `sed -n 's/^  \(-[A-Za-z0-9-]*\).*/\1/p'`

func (t *completionTable) bash(w io.Writer) {
	fmt.Fprintf(w, `# bash completion for junction (junction completion bash)
_junction() {
  local cur=${COMP_WORDS[COMP_CWORD]} cmd=
  if ((COMP_CWORD == 1)); then
    COMPREPLY=($(compgen -W %q -- "$cur"))
    return
  fi
  case ${COMP_WORDS[1]} in
`, words(t.top))
	for _, g := range t.groups {
		fmt.Fprintf(w, `  %s)
    if ((COMP_CWORD == 2)); then
      COMPREPLY=($(compgen -W %q -- "$cur"))
      return
    fi
    cmd="%s ${COMP_WORDS[2]}" ;;
`, g, words(t.subs[g]), g)
	}
	fmt.Fprintf(w, `  help)
    COMPREPLY=($(compgen -W %q -- "$cur"))
    return ;;
  completion)
    COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur"))
    return ;;
  *) cmd=${COMP_WORDS[1]} ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" $cmd -help 2>/dev/null | %s)" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -o default -F _junction junction
`, words(t.top), flagLines)
}

// zshDescribe is a zsh array of name:summary pairs for _describe.
func zshDescribe(ws []completionWord) string {
	var b strings.Builder
	b.WriteString("(")
	for i, w := range ws {
		if i > 0 {
			b.WriteString(" ")
		}
		item := strings.ReplaceAll(w.name+":"+strings.ReplaceAll(w.summary, ":", `\:`), "'", `'\''`)
		b.WriteString("'" + item + "'")
	}
	b.WriteString(")")
	return b.String()
}

func (t *completionTable) zsh(w io.Writer) {
	fmt.Fprintf(w, `#compdef junction
# zsh completion for junction (junction completion zsh)
_junction() {
  local -a cmds
  local cmd
  if ((CURRENT == 2)); then
    cmds=%s
    _describe command cmds
    return
  fi
  case ${words[2]} in
`, zshDescribe(t.top))
	for _, g := range t.groups {
		fmt.Fprintf(w, `  %s)
    if ((CURRENT == 3)); then
      cmds=%s
      _describe command cmds
      return
    fi
    cmd="%s ${words[3]}" ;;
`, g, zshDescribe(t.subs[g]), g)
	}
	fmt.Fprintf(w, `  help)
    cmds=%s
    _describe command cmds
    return ;;
  completion)
    compadd bash zsh fish
    return ;;
  *) cmd=${words[2]} ;;
  esac
  if [[ ${words[CURRENT]} == -* ]]; then
    compadd -- ${(f)"$(${words[1]} ${=cmd} -help 2>/dev/null | %s)"}
  else
    _files
  fi
}
if [[ $funcstack[1] == _junction ]]; then
  _junction "$@"
else
  compdef _junction junction
fi
`, zshDescribe(t.top), flagLines)
}

// fishQuote quotes s for fish.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func (t *completionTable) fish(w io.Writer) {
	fmt.Fprint(w, `# fish completion for junction (junction completion fish)
function __junction_flags
    set -l toks (commandline -opc)
    set -l cmd $toks[2]
    if contains -- $toks[2] `+strings.Join(t.groups, " ")+`
        set cmd $toks[2] $toks[3]
    end
    $toks[1] $cmd -help 2>/dev/null | string replace -rf '^  (-[A-Za-z0-9-]+).*' '$1'
end
complete -c junction -n 'string match -q -- "-*" (commandline -ct)' -f -a '(__junction_flags)'
`)
	for _, c := range t.top {
		fmt.Fprintf(w, "complete -c junction -n __fish_use_subcommand -f -a %s -d %s\n", c.name, fishQuote(c.summary))
	}
	for _, g := range t.groups {
		subs := words(t.subs[g])
		for _, s := range t.subs[g] {
			fmt.Fprintf(w, "complete -c junction -n %s -f -a %s -d %s\n",
				fishQuote("__fish_seen_subcommand_from "+g+"; and not __fish_seen_subcommand_from "+subs), s.name, fishQuote(s.summary))
		}
	}
	fmt.Fprintf(w, "complete -c junction -n '__fish_seen_subcommand_from completion' -f -a 'bash zsh fish'\n")
	fmt.Fprintf(w, "complete -c junction -n '__fish_seen_subcommand_from help' -f -a %s\n", fishQuote(words(t.top)))
}
