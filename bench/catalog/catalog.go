// Package catalog reads the tool-search benchmark's catalog (a JSON list
// of {server, name, description, inputSchema}; docs/performance.md, "Tool
// search") and names its tools so that one MCP server can serve them all.
//
// A catalog tool's key is server + "/" + name. Server names hold spaces,
// parentheses and non-ASCII letters, and 160 tool names occur on more
// than one server, so a fixture server cannot serve the tools under their
// own names. [Names] gives each tool the name <server>__<tool>, where
// <server> is the catalog server's name cut down to ASCII letters, digits
// and single underscores ([Servers]), and [Names] maps these back to keys.
// A hub of one upstream per catalog server, each named by its [Servers]
// part with the default prefix, gives its tools the same names.
package catalog

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// A Tool is one entry of the catalog.
type Tool struct {
	Server      string          `json:"server"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

// Key returns the tool's key in the benchmark's queries: server/name.
func (t Tool) Key() string { return t.Server + "/" + t.Name }

// Load reads a catalog file.
func Load(path string) ([]Tool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var tools []Tool
	if err := json.Unmarshal(b, &tools); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tools, nil
}

// MaxNameLen bounds the names [Names] gives: 64 bytes, what the strictest
// hosts accept for a tool name (the MCP specification allows 128).
const MaxNameLen = 64

// maxServerLen bounds the server part of a name, so that names stay
// readable.
const maxServerLen = 32

// Names returns the exposed name of each tool, in order, and the map from
// exposed names back to keys. A name is <server>__<tool>: the tool's own
// name (already a valid MCP tool name in the benchmark's catalog) after
// the server's part that [Servers] gives. It fails as [Servers] does, or
// if a key is given twice.
func Names(tools []Tool) ([]string, map[string]string, error) {
	prefix, err := Servers(tools)
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, len(tools))
	keys := make(map[string]string, len(tools))
	for i, t := range tools {
		names[i] = prefix[t.Server] + "__" + t.Name
		if _, dup := keys[names[i]]; dup {
			return nil, nil, fmt.Errorf("tool %q is given twice", t.Key())
		}
		keys[names[i]] = t.Key()
	}
	return names, keys, nil
}

// Servers returns the server part of the names [Names] gives, by catalog
// server name: the sanitised server name, the same for all tools of one
// server, cut so that every name fits [MaxNameLen], and unique among
// servers (a numeric suffix, in the catalog's order, tells apart servers
// that sanitise alike). It holds only ASCII letters, digits and single
// underscores, so it is also a valid server name for a hub's config. It
// fails if a tool's name is not a valid MCP tool name.
func Servers(tools []Tool) (map[string]string, error) {
	longest := map[string]int{}
	for _, t := range tools {
		if !validName(t.Name) {
			return nil, fmt.Errorf("tool %q: name is not a valid MCP tool name", t.Key())
		}
		longest[t.Server] = max(longest[t.Server], len(t.Name))
	}
	prefix := map[string]string{} // catalog server -> server part
	taken := map[string]bool{}    // server parts in use
	for _, t := range tools {
		if _, ok := prefix[t.Server]; ok {
			continue
		}
		room := min(maxServerLen, MaxNameLen-len("__")-longest[t.Server])
		base := sanitize(t.Server)
		p := cut(base, room)
		for n := 2; taken[p]; n++ {
			suffix := "_" + strconv.Itoa(n)
			p = cut(base, room-len(suffix)) + suffix
		}
		prefix[t.Server], taken[p] = p, true
	}
	return prefix, nil
}

// sanitize keeps ASCII letters and digits of a server name and turns each
// run of anything else into one underscore, trimmed at both ends; a name
// with no such letter becomes "s".
func sanitize(s string) string {
	var b strings.Builder
	gap := false
	for _, r := range s {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			if gap && b.Len() > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
			gap = false
		} else {
			gap = true
		}
	}
	if b.Len() == 0 {
		return "s"
	}
	return b.String()
}

// cut shortens s to at most n bytes (at least 1), without a trailing
// underscore, so that the name keeps one "__" between server and tool.
func cut(s string, n int) string {
	if len(s) > max(n, 1) {
		s = s[:max(n, 1)]
	}
	if t := strings.TrimRight(s, "_"); t != "" {
		return t
	}
	return "s"
}

// validName reports whether s is a valid MCP tool name: 1 to 128 of
// A-Z, a-z, 0-9, _, - and . (the 2025-11-25 specification).
func validName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
