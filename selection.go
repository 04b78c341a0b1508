package junction

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Selection chooses which of a hub's tools a [View] serves. It generalises
// the Diode rule: the active set is the union of the named presets and the
// named tools, minus Deny. A Selection with no presets and no tools selects
// every tool (minus Deny).
//
// Names are the names the hub serves (after prefixing). Preset names are
// matched case-insensitively; tool names exactly.
type Selection struct {
	Presets []string
	Tools   []string
	Deny    []string
	// Sources, if non-empty, limits the view to these sources: their
	// tools (narrowed further by the fields above), prompts and resources.
	Sources []string
}

// IsZero reports whether s selects every tool.
func (s Selection) IsZero() bool {
	return len(s.Presets) == 0 && len(s.Tools) == 0 && len(s.Deny) == 0 && len(s.Sources) == 0
}

// Union returns the selection of both s and o.
func (s Selection) Union(o Selection) Selection {
	return Selection{
		Presets: append(slices.Clone(s.Presets), o.Presets...),
		Tools:   append(slices.Clone(s.Tools), o.Tools...),
		Deny:    append(slices.Clone(s.Deny), o.Deny...),
		Sources: append(slices.Clone(s.Sources), o.Sources...),
	}
}

// UnknownNameError reports a preset or tool name that a selection names
// but the hub does not have.
type UnknownNameError struct {
	Kind  string   // "preset" or "tool"
	Name  string   // as given
	Known []string // sorted
}

func (e *UnknownNameError) Error() string {
	return fmt.Sprintf("unknown %s %q (known: %s)", e.Kind, e.Name, strings.Join(e.Known, ", "))
}

// ErrEmptySelection is returned when a selection names presets or tools but
// they add up to no tool at all (for example --tools " , ").
var ErrEmptySelection = fmt.Errorf("tool selection is empty")

// resolve returns the set of selected names among known, or nil for "all".
// presets maps lower-cased preset names to exposed tool names.
func (s Selection) resolve(known []string, presets map[string][]string) (map[string]bool, error) {
	has := make(map[string]bool, len(known))
	for _, n := range known {
		has[n] = true
	}
	sorted := slices.Clone(known)
	sort.Strings(sorted)
	var set map[string]bool
	if len(s.Presets) > 0 || len(s.Tools) > 0 {
		set = make(map[string]bool)
		for _, p := range s.Presets {
			names, ok := presets[normPreset(p)]
			if !ok {
				return nil, &UnknownNameError{Kind: "preset", Name: p, Known: sortedKeys(presets)}
			}
			for _, n := range names {
				set[n] = true
			}
		}
		for _, t := range s.Tools {
			if !has[t] {
				return nil, &UnknownNameError{Kind: "tool", Name: t, Known: sorted}
			}
			set[t] = true
		}
	}
	for _, d := range s.Deny {
		if !has[d] {
			return nil, &UnknownNameError{Kind: "tool", Name: d, Known: sorted}
		}
		if set == nil {
			set = make(map[string]bool, len(has))
			for n := range has {
				set[n] = true
			}
		}
		delete(set, d)
	}
	if set != nil && len(set) == 0 {
		return nil, ErrEmptySelection
	}
	return set, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// normPreset is the key a preset name is stored under.
func normPreset(name string) string { return strings.ToLower(strings.TrimSpace(name)) }

func sortedCopy(in []string) []string {
	out := slices.Clone(in)
	sort.Strings(out)
	return out
}
