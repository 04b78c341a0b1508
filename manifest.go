package junction

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ManifestVersion is the format version written by [Manifest.Write].
const ManifestVersion = 1

// A Manifest pins the tools a hub serves: each tool's name and hashes of
// its description and schemas. "junction lock" writes one; "junction
// selftest" and the drift checks compare the live tools with it, so a tool
// that changes under the same name (tool poisoning, or an upstream upgrade)
// is noticed.
type Manifest struct {
	Version int            `json:"version"`
	Tools   []ManifestTool `json:"tools"`
}

// ManifestTool is one pinned tool. Hashes are hex SHA-256 of the canonical
// JSON (sorted keys, numbers as float64) of the schema, or of the
// description text; an absent schema hashes as "".
type ManifestTool struct {
	Name         string `json:"name"`
	Source       string `json:"source,omitempty"`
	Description  string `json:"description_sha256"`
	InputSchema  string `json:"input_schema_sha256"`
	OutputSchema string `json:"output_schema_sha256,omitempty"`
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
	return ManifestTool{
		Name:         t.Name,
		Source:       source,
		Description:  hashText(t.Description),
		InputSchema:  hashJSON(t.InputSchema),
		OutputSchema: hashJSON(t.OutputSchema),
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

// LoadManifest reads the manifest file at path.
func LoadManifest(path string) (*Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := ReadManifest(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// WriteFile writes m to path atomically: a temporary file in the same
// directory, synced, then renamed over path. A reader sees the old file or
// the new one, never half of one.
func (m *Manifest) WriteFile(path string) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, append(b, '\n'), 0o644)
}

// WriteFileAtomic writes data to path through a temporary file in the same
// directory and a rename.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// Drift is the difference between a manifest and the live tools.
type Drift struct {
	Added     []string     // live tools the manifest does not pin
	Removed   []string     // pinned tools no longer served
	Changed   []ToolChange // same name, different description or schema
	Reordered bool         // same tools, different order
}

// ToolChange names what changed in one tool.
type ToolChange struct {
	Name   string
	Fields []string // "description", "input schema", "output schema"
}

// Empty reports whether there is no drift at all. A reorder alone is drift
// too: hosts and caches may key on position.
func (d *Drift) Empty() bool {
	return len(d.Added) == 0 && len(d.Removed) == 0 && len(d.Changed) == 0 && !d.Reordered
}

// Compare returns how live differs from m.
func (m *Manifest) Compare(live *Manifest) *Drift {
	d := &Drift{}
	old := make(map[string]ManifestTool, len(m.Tools))
	for _, t := range m.Tools {
		old[t.Name] = t
	}
	now := make(map[string]bool, len(live.Tools))
	var commonLive []string
	for _, t := range live.Tools {
		now[t.Name] = true
		o, ok := old[t.Name]
		if !ok {
			d.Added = append(d.Added, t.Name)
			continue
		}
		commonLive = append(commonLive, t.Name)
		var fields []string
		if o.Description != t.Description {
			fields = append(fields, "description")
		}
		if o.InputSchema != t.InputSchema {
			fields = append(fields, "input schema")
		}
		if o.OutputSchema != t.OutputSchema {
			fields = append(fields, "output schema")
		}
		if len(fields) > 0 {
			d.Changed = append(d.Changed, ToolChange{Name: t.Name, Fields: fields})
		}
	}
	var commonOld []string
	for _, t := range m.Tools {
		if !now[t.Name] {
			d.Removed = append(d.Removed, t.Name)
		} else {
			commonOld = append(commonOld, t.Name)
		}
	}
	d.Reordered = !slices.Equal(commonOld, commonLive)
	return d
}

// String renders d for people, one line per finding.
func (d *Drift) String() string {
	if d.Empty() {
		return "no drift\n"
	}
	var b strings.Builder
	for _, n := range d.Added {
		fmt.Fprintf(&b, "added:     %s\n", n)
	}
	for _, n := range d.Removed {
		fmt.Fprintf(&b, "removed:   %s\n", n)
	}
	for _, c := range d.Changed {
		fmt.Fprintf(&b, "changed:   %s (%s)\n", c.Name, strings.Join(c.Fields, ", "))
	}
	if d.Reordered {
		fmt.Fprintf(&b, "reordered: the tools are served in a different order\n")
	}
	return b.String()
}
