// Package hostconfig finds, reads and rewrites the MCP server lists of AI
// hosts (Claude Desktop, Claude Code, Cursor, VS Code, Windsurf) for
// "junction connect" and "junction disconnect".
//
// Everything that depends on the machine comes in through [Env]: the
// operating system, the environment (HOME, APPDATA, XDG_CONFIG_HOME,
// USERPROFILE) and the working directory, so the macOS, Windows and Linux
// layouts are all testable on one machine. Files are edited in place: only
// the servers object changes, every other byte of the host's file is
// kept, and every write is atomic (a temporary file renamed over the old
// one, with the old one's mode).
package hostconfig

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/junction-mcp/junction/internal/editdist"
)

// Env is what the package may know of the machine.
type Env struct {
	// GOOS is "darwin", "windows" or anything else (Linux and the BSDs).
	GOOS string
	// Getenv reads the environment.
	Getenv func(string) string
	// Dir is the working directory: the project for project scopes.
	Dir string
}

func (e Env) getenv(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

// join joins path elements with the separator of e.GOOS, so a Windows
// layout computed on Linux reads as Windows paths.
func (e Env) join(elem ...string) string {
	if e.GOOS == "windows" {
		var parts []string
		for _, p := range elem {
			if p != "" {
				parts = append(parts, strings.TrimRight(p, `\/`))
			}
		}
		return strings.Join(parts, `\`)
	}
	return filepath.Join(elem...)
}

// Home is the user's home directory: USERPROFILE on Windows (HOME if
// unset), HOME elsewhere.
func (e Env) Home() (string, error) {
	if e.GOOS == "windows" {
		if h := e.getenv("USERPROFILE"); h != "" {
			return h, nil
		}
	}
	if h := e.getenv("HOME"); h != "" {
		return h, nil
	}
	return "", fmt.Errorf("cannot find your home directory: HOME is not set")
}

// ConfigDir is the per-user configuration directory, as os.UserConfigDir
// defines it: %APPDATA% on Windows, ~/Library/Application Support on macOS,
// $XDG_CONFIG_HOME or ~/.config elsewhere.
func (e Env) ConfigDir() (string, error) {
	switch e.GOOS {
	case "windows":
		if d := e.getenv("APPDATA"); d != "" {
			return d, nil
		}
		return "", fmt.Errorf("cannot find your configuration directory: APPDATA is not set")
	case "darwin":
		h, err := e.Home()
		if err != nil {
			return "", err
		}
		return e.join(h, "Library", "Application Support"), nil
	}
	if d := e.getenv("XDG_CONFIG_HOME"); d != "" && filepath.IsAbs(d) {
		return d, nil
	}
	h, err := e.Home()
	if err != nil {
		return "", err
	}
	return e.join(h, ".config"), nil
}

// Scopes of a host's server list.
const (
	ScopeUser    = "user"    // the user's own file, for every project
	ScopeProject = "project" // a file in the project, shared with its users (.mcp.json, .vscode/mcp.json, .cursor/mcp.json)
	ScopeLocal   = "local"   // Claude Code: this project, for this user only (~/.claude.json, under "projects")
)

// Host is an AI host whose MCP servers junction can take over.
type Host struct {
	// ID is the name on the command line.
	ID string
	// Name is the product's name.
	Name string
	// Aliases are other accepted spellings.
	Aliases []string
	// Key is the JSON key of the servers object: "mcpServers", or
	// "servers" for VS Code.
	Key string
	// Scopes lists the scopes the host has; the first is the default.
	Scopes []string
	// TypeField: the host wants "type": "stdio" in a stdio entry (VS Code).
	TypeField bool

	paths func(e Env, scope string) (string, error)
}

// Location is one host file, and where in it the servers are.
type Location struct {
	Host  *Host
	Scope string
	File  string
	// Path is the chain of keys from the top of the file to the object
	// that holds the servers object (empty: the top level). Claude Code's
	// local scope is ["projects", DIR].
	Path []string
	// Dir is the project directory of the project and local scopes
	// (empty for the user scope). A file of the project that lies inside
	// it must also resolve inside it once symbolic links are followed:
	// connect and disconnect refuse one that leads out (see
	// [Location.Confine]). The files of the project are junction's
	// config, and in the project scope the host's file and its backups.
	Dir string
}

// Describe names the servers object, for messages: "mcpServers" or
// `projects["/src/app"].mcpServers`.
func (l *Location) Describe() string {
	var b strings.Builder
	for i, k := range l.Path {
		if i == 0 {
			b.WriteString(k)
		} else {
			fmt.Fprintf(&b, "[%q]", k)
		}
	}
	if b.Len() > 0 {
		b.WriteString(".")
	}
	b.WriteString(l.Host.Key)
	return b.String()
}

var hosts = []*Host{
	{
		ID: "claude-desktop", Name: "Claude Desktop", Aliases: []string{"claude", "claude_desktop", "claudedesktop"},
		Key: "mcpServers", Scopes: []string{ScopeUser},
		paths: func(e Env, scope string) (string, error) {
			d, err := e.ConfigDir()
			if err != nil {
				return "", err
			}
			return e.join(d, "Claude", "claude_desktop_config.json"), nil
		},
	},
	{
		ID: "claude-code", Name: "Claude Code", Aliases: []string{"claude_code", "claudecode", "cc"},
		Key: "mcpServers", Scopes: []string{ScopeUser, ScopeLocal, ScopeProject},
		paths: func(e Env, scope string) (string, error) {
			if scope == ScopeProject {
				return e.join(e.Dir, ".mcp.json"), nil
			}
			h, err := e.Home()
			if err != nil {
				return "", err
			}
			return e.join(h, ".claude.json"), nil
		},
	},
	{
		ID: "cursor", Name: "Cursor", Key: "mcpServers", Scopes: []string{ScopeUser, ScopeProject},
		paths: func(e Env, scope string) (string, error) {
			if scope == ScopeProject {
				return e.join(e.Dir, ".cursor", "mcp.json"), nil
			}
			h, err := e.Home()
			if err != nil {
				return "", err
			}
			return e.join(h, ".cursor", "mcp.json"), nil
		},
	},
	{
		ID: "vscode", Name: "VS Code", Aliases: []string{"code", "vs-code", "visual-studio-code"},
		Key: "servers", Scopes: []string{ScopeUser, ScopeProject}, TypeField: true,
		paths: func(e Env, scope string) (string, error) {
			if scope == ScopeProject {
				return e.join(e.Dir, ".vscode", "mcp.json"), nil
			}
			d, err := e.ConfigDir()
			if err != nil {
				return "", err
			}
			return e.join(d, "Code", "User", "mcp.json"), nil
		},
	},
	{
		ID: "windsurf", Name: "Windsurf", Aliases: []string{"codeium"},
		Key: "mcpServers", Scopes: []string{ScopeUser},
		paths: func(e Env, scope string) (string, error) {
			h, err := e.Home()
			if err != nil {
				return "", err
			}
			return e.join(h, ".codeium", "windsurf", "mcp_config.json"), nil
		},
	},
}

// HostIDs lists the hosts' command-line names.
func HostIDs() []string {
	var ids []string
	for _, h := range hosts {
		ids = append(ids, h.ID)
	}
	sort.Strings(ids)
	return ids
}

// Lookup finds a host by its ID or an alias, ignoring case, spaces and
// dashes.
func Lookup(name string) (*Host, error) {
	norm := func(s string) string {
		return strings.NewReplacer("-", "", "_", "", " ", "").Replace(strings.ToLower(s))
	}
	n := norm(name)
	for _, h := range hosts {
		if norm(h.ID) == n || norm(h.Name) == n {
			return h, nil
		}
		for _, a := range h.Aliases {
			if norm(a) == n {
				return h, nil
			}
		}
	}
	hint := ""
	if near := nearestHost(n, norm); near != "" {
		hint = fmt.Sprintf("; did you mean %q?", near)
	}
	return nil, fmt.Errorf("unknown host %q%s (known hosts: %s)", name, hint, strings.Join(HostIDs(), ", "))
}

// nearestHost returns the ID of the host whose ID, name or alias is
// closest to the normalised name n, if one is close enough to be a typo
// ("claud-desktop"), else "".
func nearestHost(n string, norm func(string) string) string {
	best, bestD := "", 3
	if len(n) <= 6 {
		bestD = 2
	}
	for _, h := range hosts {
		for _, cand := range append([]string{h.ID, h.Name}, h.Aliases...) {
			if d := editdist.Distance(n, norm(cand)); d <= bestD && (best == "" || d < bestD) {
				best, bestD = h.ID, d
			}
		}
	}
	return best
}

// Locate returns the host file for scope ("" means the host's default).
// file, if not empty, overrides the documented location (scope still says
// where in the file the servers are).
func (h *Host) Locate(e Env, scope, file string) (*Location, error) {
	if scope == "" {
		scope = h.Scopes[0]
	}
	ok := false
	for _, s := range h.Scopes {
		ok = ok || s == scope
	}
	if !ok {
		return nil, fmt.Errorf("%s has no %q scope (it has: %s)", h.Name, scope, strings.Join(h.Scopes, ", "))
	}
	if (scope == ScopeProject || scope == ScopeLocal) && e.Dir == "" {
		return nil, fmt.Errorf("the %s scope needs a project directory (-dir)", scope)
	}
	loc := &Location{Host: h, Scope: scope, File: file}
	if loc.File == "" {
		f, err := h.paths(e, scope)
		if err != nil {
			return nil, err
		}
		loc.File = f
	}
	if scope == ScopeLocal {
		loc.Path = []string{"projects", e.Dir}
	}
	if scope == ScopeProject || scope == ScopeLocal {
		loc.Dir = e.Dir
	}
	return loc, nil
}

// DefaultJunctionConfig is where "junction connect" keeps the servers it
// moves: junction.json in the project directory for the project and local
// scopes (so ${workspaceFolder} keeps meaning the project), else in
// junction's directory of the user configuration directory.
func DefaultJunctionConfig(e Env, scope string) (string, error) {
	if scope == ScopeProject || scope == ScopeLocal {
		return e.join(e.Dir, "junction.json"), nil
	}
	d, err := e.ConfigDir()
	if err != nil {
		return "", err
	}
	return e.join(d, "junction", "junction.json"), nil
}
