package junction

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// PrefixMode says when a hub puts a source's name in front of the names of
// its tools and prompts.
type PrefixMode int

const (
	// PrefixAlways names every tool "<source>__<tool>". It is the default:
	// names never change when another source is added.
	PrefixAlways PrefixMode = iota
	// PrefixOnConflict keeps a tool's own name unless another source has a
	// tool of the same name; then both are prefixed.
	PrefixOnConflict
	// PrefixNever keeps the source's own names. A clash with another source
	// is reported (see [Hub.Collisions]) and the source added first keeps
	// the name.
	PrefixNever
	// PrefixMCP names every tool "mcp__<source>__<tool>", the form Claude
	// Code and clients modelled on it (deepseekcode) give MCP tools, so
	// allowlists and prompts written for those names keep working.
	PrefixMCP
)

// MCPNamePrefix opens every name under [PrefixMCP].
const MCPNamePrefix = "mcp" + NameSeparator

var prefixModeNames = [...]string{"always", "on-conflict", "never", "mcp"}

func (m PrefixMode) String() string {
	if int(m) < len(prefixModeNames) {
		return prefixModeNames[m]
	}
	return fmt.Sprintf("PrefixMode(%d)", int(m))
}

// ParsePrefixMode parses "always", "on-conflict" (or "conflict"), "never"
// and "mcp".
func ParsePrefixMode(s string) (PrefixMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "always":
		return PrefixAlways, nil
	case "on-conflict", "conflict", "on_conflict":
		return PrefixOnConflict, nil
	case "never":
		return PrefixNever, nil
	case "mcp":
		return PrefixMCP, nil
	}
	return 0, fmt.Errorf("unknown prefix mode %q (use always, on-conflict, never or mcp)", s)
}

// NameSeparator joins a source name and a tool name.
const NameSeparator = "__"

// MaxNameLength is the longest tool or prompt name a hub serves. Hosts such
// as Claude and the OpenAI API reject longer tool names, so longer ones are
// shortened by [ShortenName].
const MaxNameLength = 64

// ShortenName returns name unchanged if it fits in max bytes; otherwise a
// readable stem of name followed by "_" and 8 hex digits of its SHA-256,
// max bytes in all. The result depends only on name and max, so it is
// stable across restarts and machines.
func ShortenName(name string, max int) string {
	if len(name) <= max {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "_" + hex.EncodeToString(sum[:4])
	stem := name[:max-len(suffix)]
	return strings.TrimRight(stem, "_-.") + suffix
}

// exposedName is the name a hub serves for a source-local name.
func exposedName(prefix, local string, mode PrefixMode, conflict bool) string {
	name := local
	switch {
	case mode == PrefixAlways || (mode == PrefixOnConflict && conflict):
		name = prefix + NameSeparator + local
	case mode == PrefixMCP:
		name = MCPNamePrefix + prefix + NameSeparator + local
	}
	return ShortenName(name, MaxNameLength)
}
