package junction

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ManifestVersion is the format version a [Manifest] is written in and
// [ReadManifest] accepts.
const ManifestVersion = 1

// A Manifest pins the tools a hub serves: each tool's name and hashes of
// its description, schemas, title and annotations. "junction lock" writes
// one; "junction selftest" and the drift checks compare the live tools with
// it, so a tool that changes under the same name (tool poisoning, or an
// upstream upgrade) is noticed.
type Manifest struct {
	Version int            `json:"version"`
	Tools   []ManifestTool `json:"tools"`
}

// ManifestTool is one pinned tool. Hashes are hex SHA-256 of the canonical
// JSON (sorted keys, numbers as float64) of the schema, or of the
// description text; an absent schema hashes as "".
//
// Annotations hashes the canonical JSON of the tool's title and
// annotations together. [PinTool] always sets it; it is empty only in lock
// files written before junction pinned annotations, and empty means "not
// pinned": [Manifest.Compare] does not report such a tool's title or
// annotations as changed.
type ManifestTool struct {
	Name         string `json:"name"`
	Source       string `json:"source,omitempty"`
	Description  string `json:"description_sha256"`
	InputSchema  string `json:"input_schema_sha256"`
	OutputSchema string `json:"output_schema_sha256,omitempty"`
	Annotations  string `json:"annotations_sha256,omitempty"`
}

// NewManifest pins tools in the order given.
func NewManifest(tools []ToolInfo) *Manifest {
	m := &Manifest{Version: ManifestVersion, Tools: []ManifestTool{}}
	for _, t := range tools {
		m.Tools = append(m.Tools, PinTool(t.Tool, t.Source))
	}
	return m
}

// PinTool returns the manifest entry for one tool.
func PinTool(t *mcp.Tool, source string) ManifestTool {
	// A tool with neither title nor annotations hashes "{}", not "", so
	// annotations it gains later are drift.
	labels := struct {
		Title       string               `json:"title,omitempty"`
		Annotations *mcp.ToolAnnotations `json:"annotations,omitempty"`
	}{t.Title, t.Annotations}
	return ManifestTool{
		Name:         t.Name,
		Source:       source,
		Description:  hashText(t.Description),
		InputSchema:  hashJSON(t.InputSchema),
		OutputSchema: hashJSON(t.OutputSchema),
		Annotations:  hashJSON(labels),
	}
}

func hashText(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// hashJSON hashes the canonical form of v, "" for nil, JSON null or a
// value that is not JSON.
func hashJSON(v any) string {
	c, err := CanonicalJSON(v)
	if err != nil || string(c) == "null" {
		return ""
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:])
}

// CanonicalJSON returns v as JSON with object keys sorted, no
// insignificant space, and numbers in one spelling (1, 1.0 and 1e0 are the
// same), so two schemas can be compared or hashed. A json.RawMessage or
// []byte is parsed first. Nil, JSON null and an empty raw message all give
// "null"; a value that is not JSON is an error.
func CanonicalJSON(v any) ([]byte, error) {
	var raw []byte
	switch x := v.(type) {
	case nil:
		return []byte("null"), nil
	case json.RawMessage:
		raw = x
	case []byte:
		raw = x
	default:
		var err error
		if raw, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("canonical JSON: %w", err)
		}
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return []byte("null"), nil
	}
	var decoded any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	// encoding/json sorts map keys and prints float64 in its shortest form.
	out, err := json.Marshal(decoded)
	if err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	return out, nil
}

// ReadManifest parses a manifest. Unknown fields are errors, so a typo in a
// hand-edited file is not silently ignored.
func ReadManifest(r io.Reader) (*Manifest, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if m.Version != ManifestVersion {
		return nil, fmt.Errorf("manifest: version %d is not supported (want %d)", m.Version, ManifestVersion)
	}
	seen := make(map[string]bool)
	for i, t := range m.Tools {
		if t.Name == "" {
			return nil, fmt.Errorf("manifest: tools[%d].name: must not be empty", i)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("manifest: tools[%d].name: duplicate tool %q", i, t.Name)
		}
		seen[t.Name] = true
	}
	return &m, nil
}

// Drift is every difference between an old and a new tool list: a lock
// and the tools served now ([Manifest.Compare]), or an upstream's previous
// and current tools/list ([CompareTools]). Every difference is listed, not
// only the first. The zero value (and nil) is no drift.
type Drift struct {
	// Duplicates are names listed more than once in one list; only the
	// first entry of each is compared. A lock file cannot have any (see
	// [ReadManifest]), an upstream's tools/list can.
	Duplicates []Duplicate  `json:",omitempty"`
	Added      []string     // in the new list only, in its order
	Removed    []string     // in the old list only, in its order
	Changed    []ToolChange // in both, with different pins, in the new list's order
	// Reordered reports that the tools both lists have are in a different
	// order. A reorder alone is drift: hosts and caches may key on
	// position.
	Reordered bool
}

// A Duplicate is a tool name listed more than once in one list.
type Duplicate struct {
	Name string
	Old  bool // in the old list (the lock, or the previous tools/list); else in the new one
}

// ToolChange names what changed in one tool.
type ToolChange struct {
	Name   string
	Fields []string // FieldDescription, FieldInputSchema, FieldOutputSchema, FieldAnnotations, in that order
}

// The fields a [ToolChange] names, as people read them.
const (
	FieldDescription  = "description"
	FieldInputSchema  = "input schema"
	FieldOutputSchema = "output schema"
	FieldAnnotations  = "title or annotations"
)

// Empty reports whether there is no drift at all.
func (d *Drift) Empty() bool {
	return d == nil || len(d.Duplicates) == 0 && len(d.Added) == 0 && len(d.Removed) == 0 && len(d.Changed) == 0 && !d.Reordered
}

// CompareTools returns how the tool list after differs from before, by the
// same pins as a lock ([PinTool]): schemas, title and annotations are
// compared canonically, so key order and 1 vs 1.0 do not count. Nil
// entries are skipped; nil and empty lists are the same. An upstream calls
// it each time it reads its server's tools/list again.
func CompareTools(before, after []*mcp.Tool) *Drift {
	pin := func(tools []*mcp.Tool) *Manifest {
		m := &Manifest{Version: ManifestVersion}
		for _, t := range tools {
			if t != nil {
				m.Tools = append(m.Tools, PinTool(t, ""))
			}
		}
		return m
	}
	return pin(before).Compare(pin(after))
}

// Compare returns how live differs from m. Sources are not compared: a
// tool's pins are what matter, whoever serves it.
func (m *Manifest) Compare(live *Manifest) *Drift {
	d := &Drift{}
	old, oldOrder := d.index(m.Tools, true)
	now, nowOrder := d.index(live.Tools, false)
	var commonLive []string
	for _, name := range nowOrder {
		o, ok := old[name]
		if !ok {
			d.Added = append(d.Added, name)
			continue
		}
		commonLive = append(commonLive, name)
		if fields := changedFields(o, now[name]); len(fields) > 0 {
			d.Changed = append(d.Changed, ToolChange{Name: name, Fields: fields})
		}
	}
	var commonOld []string
	for _, name := range oldOrder {
		if _, ok := now[name]; ok {
			commonOld = append(commonOld, name)
		} else {
			d.Removed = append(d.Removed, name)
		}
	}
	d.Reordered = !slices.Equal(commonOld, commonLive)
	return d
}

// index maps each name in tools to its first entry and returns the names
// in order, once each; names listed again are added to d.Duplicates.
func (d *Drift) index(tools []ManifestTool, old bool) (map[string]ManifestTool, []string) {
	byName := make(map[string]ManifestTool, len(tools))
	var order []string
	for _, t := range tools {
		if _, dup := byName[t.Name]; !dup {
			byName[t.Name] = t
			order = append(order, t.Name)
			continue
		}
		if !slices.Contains(d.Duplicates, Duplicate{Name: t.Name, Old: old}) {
			d.Duplicates = append(d.Duplicates, Duplicate{Name: t.Name, Old: old})
		}
	}
	return byName, order
}

// changedFields names the pins that differ. An empty Annotations pin is a
// lock file from before annotations were pinned: not compared.
func changedFields(old, live ManifestTool) []string {
	var fields []string
	if old.Description != live.Description {
		fields = append(fields, FieldDescription)
	}
	if old.InputSchema != live.InputSchema {
		fields = append(fields, FieldInputSchema)
	}
	if old.OutputSchema != live.OutputSchema {
		fields = append(fields, FieldOutputSchema)
	}
	if old.Annotations != "" && live.Annotations != "" && old.Annotations != live.Annotations {
		fields = append(fields, FieldAnnotations)
	}
	return fields
}

// A finding is one line of a drift report: what kind of difference, and
// the tool it concerns (or the reorder).
type finding struct{ kind, what string }

func (d *Drift) findings() []finding {
	if d.Empty() {
		return nil
	}
	var f []finding
	for _, dup := range d.Duplicates {
		list := "new"
		if dup.Old {
			list = "old"
		}
		f = append(f, finding{"duplicate", fmt.Sprintf("%s (listed more than once in the %s list)", dup.Name, list)})
	}
	for _, n := range d.Added {
		f = append(f, finding{"added", n})
	}
	for _, n := range d.Removed {
		f = append(f, finding{"removed", n})
	}
	for _, c := range d.Changed {
		f = append(f, finding{"changed", fmt.Sprintf("%s (%s)", c.Name, strings.Join(c.Fields, ", "))})
	}
	if d.Reordered {
		f = append(f, finding{"reordered", "the tools are served in a different order"})
	}
	return f
}

// String renders d for people, one line per finding, or "no drift":
//
//	added:     search
//	changed:   fetch (description, title or annotations)
//	reordered: the tools are served in a different order
func (d *Drift) String() string {
	f := d.findings()
	if len(f) == 0 {
		return "no drift\n"
	}
	var b strings.Builder
	for _, x := range f {
		fmt.Fprintf(&b, "%-10s %s\n", x.kind+":", x.what)
	}
	return b.String()
}

// Summary renders d on one line, for a log attribute or a table cell:
// "added: search; changed: fetch (description); reordered", or "no drift".
func (d *Drift) Summary() string {
	f := d.findings()
	if len(f) == 0 {
		return "no drift"
	}
	parts := make([]string, len(f))
	for i, x := range f {
		if x.kind == "reordered" {
			parts[i] = "reordered"
		} else {
			parts[i] = x.kind + ": " + x.what
		}
	}
	return strings.Join(parts, "; ")
}
