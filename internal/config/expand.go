package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// expander resolves the ${...} references in the fields that allow them
// (see docs/config.md, "Variables"). The forms are:
//
//	${NAME}            the environment variable NAME; an error if unset or empty
//	${NAME:-default}   NAME, or default if NAME is unset or empty
//	${env:NAME}        the same as ${NAME} (VS Code and Cursor spelling)
//	${userHome}        $HOME
//	${workspaceFolder} the project folder (Load only; see below)
//	${workspaceFolderBasename}, ${pathSeparator}, ${/}
//	$${                a literal "${"
//
// A lone "$" and "$NAME" without braces are literal text: shell-style
// $NAME would break arguments that contain dollar signs on purpose.
type expander struct {
	getenv func(string) string
	// workspace is the folder ${workspaceFolder} names: the directory of
	// the config file, or its parent when that directory is .vscode or
	// .cursor. Empty when Parse was not given a file.
	workspace string
	// claudeCode and project are set by Load for Claude Code's
	// ~/.claude.json: the file is one by name, and project is the working
	// directory, whose projects entry holds local-scope servers.
	claudeCode bool
	project    string
}

func (x *expander) expand(s string) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		if i > 0 && s[i-1] == '$' { // $${ is a literal ${
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("unterminated reference %q (write $${ for a literal ${)", truncate(s[i:], 30))
		}
		ref := s[i+2 : i+end]
		val, err := x.resolve(ref)
		if err != nil {
			return "", err
		}
		b.WriteString(val)
		s = s[i+end+1:]
	}
}

func (x *expander) resolve(ref string) (string, error) {
	switch ref {
	case "userHome":
		if h := x.getenv("HOME"); h != "" {
			return h, nil
		}
		return "", errors.New("${userHome} needs the HOME environment variable, which is not set")
	case "workspaceFolder", "workspaceFolderBasename":
		if x.workspace == "" {
			return "", fmt.Errorf("${%s} is only known when the config is loaded from a file", ref)
		}
		if ref == "workspaceFolder" {
			return x.workspace, nil
		}
		return filepath.Base(x.workspace), nil
	case "pathSeparator", "/":
		return string(os.PathSeparator), nil
	}
	if id, ok := strings.CutPrefix(ref, "input:"); ok {
		return "", fmt.Errorf("${input:%s} is a VS Code input prompt, which junction cannot show; use an environment variable instead, such as ${%s}", id, envName(id))
	}
	ref = strings.TrimPrefix(ref, "env:")
	name, def, hasDef := strings.Cut(ref, ":-")
	if !validEnvName(name) {
		return "", fmt.Errorf("bad reference ${%s}: use ${NAME} or ${NAME:-default}, where NAME is letters, digits and _", ref)
	}
	if v := x.getenv(name); v != "" {
		return v, nil
	}
	if hasDef {
		return def, nil
	}
	return "", fmt.Errorf("environment variable %s is not set (write ${%s:-} to allow it to be empty)", name, name)
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// envName suggests an environment variable name for a VS Code input id
// ("github-token" → GITHUB_TOKEN).
func envName(id string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(id) {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "NAME"
	}
	return b.String()
}

// workspaceFor returns the folder ${workspaceFolder} names for a config at
// path: its directory, or that directory's parent for .vscode/mcp.json and
// .cursor/mcp.json.
func workspaceFor(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	dir := filepath.Dir(abs)
	switch filepath.Base(dir) {
	case ".vscode", ".cursor":
		return filepath.Dir(dir)
	}
	return dir
}
