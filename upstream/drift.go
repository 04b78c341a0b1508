package upstream

import (
	"bytes"
	"fmt"
	"github.com/junction-mcp/junction"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ChangeKind classifies one difference between two tool lists.
type ChangeKind string

// The kinds of [Change], after deepseekcode's drift categories; unlike the
// seed, a [DriftReport] lists every difference, not only the first.
const (
	ChangeDuplicate          ChangeKind = "duplicate"           // a name appears twice in one list
	ChangeAdded              ChangeKind = "added"               // in after only
	ChangeRemoved            ChangeKind = "removed"             // in before only
	ChangeReordered          ChangeKind = "reordered"           // same names, different order
	ChangeDescription        ChangeKind = "description_changed" // same name, new description
	ChangeInputSchema        ChangeKind = "schema_changed"      // same name, input schema differs canonically
	ChangeOutputSchema       ChangeKind = "output_schema_changed"
	ChangeTitleOrAnnotations ChangeKind = "annotations_changed" // title or annotations differ
)

// A Change is one difference between two tool lists.
type Change struct {
	Kind ChangeKind
	Tool string // empty for ChangeReordered
	// List is "before" or "after" for ChangeDuplicate; empty otherwise.
	List string
}

func (c Change) String() string {
	switch {
	case c.Kind == ChangeReordered:
		return "tool order changed"
	case c.List != "":
		return fmt.Sprintf("%s tool %q in %s list", c.Kind, c.Tool, c.List)
	}
	return fmt.Sprintf("%s: %q", c.Kind, c.Tool)
}

// A DriftReport lists every difference between two tool lists, in a fixed
// order: duplicates, added (in after order), removed (in before order),
// reordered, then per-tool changes (in after order).
type DriftReport struct {
	Changes []Change
}

// Empty reports whether the lists were the same.
func (d DriftReport) Empty() bool { return len(d.Changes) == 0 }

// Tools returns the names of the tools that were added or changed, which a
// "block changed tools" policy holds back. Removed tools are not listed.
func (d DriftReport) Tools() []string {
	var names []string
	for _, c := range d.Changes {
		if c.Tool != "" && c.Kind != ChangeRemoved && c.Kind != ChangeDuplicate && !slices.Contains(names, c.Tool) {
			names = append(names, c.Tool)
		}
	}
	return names
}

func (d DriftReport) String() string {
	if d.Empty() {
		return "no drift"
	}
	parts := make([]string, len(d.Changes))
	for i, c := range d.Changes {
		parts[i] = c.String()
	}
	return strings.Join(parts, "; ")
}

// CompareTools reports every difference between before and after. Nil and
// empty lists are the same. Schemas are compared canonically (see
// [CanonicalJSON]): key order and number spelling do not matter.
func CompareTools(before, after []*mcp.Tool) DriftReport {
	var d DriftReport
	add := func(k ChangeKind, tool, list string) {
		d.Changes = append(d.Changes, Change{Kind: k, Tool: tool, List: list})
	}
	index := func(list []*mcp.Tool, name string) map[string]*mcp.Tool {
		m := make(map[string]*mcp.Tool, len(list))
		for _, t := range list {
			if t == nil {
				continue
			}
			if _, dup := m[t.Name]; dup {
				add(ChangeDuplicate, t.Name, name)
				continue
			}
			m[t.Name] = t
		}
		return m
	}
	b := index(before, "before")
	a := index(after, "after")
	var common []string
	for _, t := range after {
		if t == nil {
			continue
		}
		if _, ok := b[t.Name]; !ok {
			if !hasChange(d, ChangeAdded, t.Name) {
				add(ChangeAdded, t.Name, "")
			}
		}
	}
	for _, t := range before {
		if t == nil {
			continue
		}
		if _, ok := a[t.Name]; !ok {
			if !hasChange(d, ChangeRemoved, t.Name) {
				add(ChangeRemoved, t.Name, "")
			}
		} else if !slices.Contains(common, t.Name) {
			common = append(common, t.Name)
		}
	}
	// Reordered: the tools both lists have appear in a different relative
	// order.
	var afterCommon []string
	for _, t := range after {
		if t != nil && b[t.Name] != nil && !slices.Contains(afterCommon, t.Name) {
			afterCommon = append(afterCommon, t.Name)
		}
	}
	if !slices.Equal(common, afterCommon) {
		add(ChangeReordered, "", "")
	}
	for _, name := range afterCommon {
		bt, at := b[name], a[name]
		if bt.Description != at.Description {
			add(ChangeDescription, name, "")
		}
		if !sameJSON(bt.InputSchema, at.InputSchema) {
			add(ChangeInputSchema, name, "")
		}
		if !sameJSON(bt.OutputSchema, at.OutputSchema) {
			add(ChangeOutputSchema, name, "")
		}
		if bt.Title != at.Title || !sameJSON(bt.Annotations, at.Annotations) {
			add(ChangeTitleOrAnnotations, name, "")
		}
	}
	return d
}

func hasChange(d DriftReport, k ChangeKind, tool string) bool {
	return slices.ContainsFunc(d.Changes, func(c Change) bool { return c.Kind == k && c.Tool == tool })
}

// sameJSON compares two values canonically; a value that cannot be encoded
// is different from everything.
func sameJSON(a, b any) bool {
	ca, err1 := junction.CanonicalJSON(a)
	cb, err2 := junction.CanonicalJSON(b)
	if err1 != nil || err2 != nil {
		return false
	}
	return bytes.Equal(ca, cb)
}
