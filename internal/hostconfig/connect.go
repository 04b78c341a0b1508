package hostconfig

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/junction-mcp/junction/internal/config"
)

// Junction is how the host is to run junction.
type Junction struct {
	// Name of junction's entry in the host's servers ("junction").
	Name string
	// Command and Args run it: the junction binary, "serve", "-config",
	// the junction config file.
	Command string
	Args    []string
	// Executable is the running junction binary; entries of the host that
	// run it on the host's file or junction's config are junction already,
	// and are replaced, not moved.
	Executable string
	// Keep names servers that stay in the host, beside junction.
	Keep []string
}

// ConnectPlan is what "junction connect" would do: the host file before
// and after, and junction's config file before and after.
type ConnectPlan struct {
	Loc *Location

	HostBefore, HostAfter []byte
	HostMode              fs.FileMode

	// JunctionFile is junction's config file; JunctionBefore is nil when
	// it does not exist yet.
	JunctionFile                  string
	JunctionBefore, JunctionAfter []byte
	JunctionMode                  fs.FileMode

	// Moved are the servers moved into junction's config, Same those
	// already there with the same definition, Replaced the host's entries
	// that were junction already, Kept those left in the host; all sorted.
	Moved, Same, Replaced, Kept []string
}

// Diff is the unified diff of both files.
func (p *ConnectPlan) Diff() string {
	return Unified(p.JunctionFile, p.JunctionFile, p.JunctionBefore, p.JunctionAfter) +
		Unified(p.Loc.File, p.Loc.File, p.HostBefore, p.HostAfter)
}

// readHost reads and parses the host file, with errors that name it and
// say what to do.
func readHost(loc *Location) ([]byte, fs.FileMode, *jvalue, error) {
	data, err := os.ReadFile(loc.File)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil, fmt.Errorf("%s: no such file: %s keeps its MCP servers there (scope %s); add a server in %s first, or name the file with -file", loc.File, loc.Host.Name, loc.Scope, loc.Host.Name)
	}
	if err != nil {
		return nil, 0, nil, fmt.Errorf("%s: %w", loc.File, err)
	}
	fi, err := os.Stat(loc.File)
	if err != nil {
		return nil, 0, nil, err
	}
	root, err := parseJSONC(data)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("%s: %v: the file is not valid JSON; fix it (or restore it from %s's own backup) and run again", loc.File, err, loc.Host.Name)
	}
	if root.kind != '{' {
		return nil, 0, nil, fmt.Errorf("%s: the top level is not a JSON object; is this %s's MCP config?", loc.File, loc.Host.Name)
	}
	return data, fi.Mode().Perm(), root, nil
}

// serversObject finds the object that holds the servers object (following
// loc.Path) and the servers object itself (nil when absent).
func serversObject(loc *Location, root *jvalue) (parent, servers *jvalue, err error) {
	parent = root
	for _, k := range loc.Path {
		parent = parent.get(k)
		if parent == nil || parent.kind != '{' {
			return nil, nil, fmt.Errorf("%s: no %s: %s has no servers for this project", loc.File, loc.Describe(), loc.Host.Name)
		}
	}
	servers = parent.get(loc.Host.Key)
	if servers != nil && servers.kind != '{' {
		return nil, nil, fmt.Errorf("%s: %s is not an object", loc.File, loc.Describe())
	}
	return parent, servers, nil
}

// PlanConnect reads the host's file and junction's config file and works
// out both new files. It writes nothing.
func PlanConnect(loc *Location, junctionFile string, j Junction) (*ConnectPlan, error) {
	if err := loc.confineHost(loc.File); err != nil {
		return nil, err
	}
	data, mode, root, err := readHost(loc)
	if err != nil {
		return nil, err
	}
	parent, servers, err := serversObject(loc, root)
	if err != nil {
		return nil, err
	}
	if servers == nil || len(servers.members) == 0 {
		return nil, fmt.Errorf("%s: %s has no MCP servers in %s: nothing to move into junction", loc.File, loc.Host.Name, loc.Describe())
	}
	p := &ConnectPlan{Loc: loc, HostBefore: data, HostMode: mode, JunctionFile: junctionFile, JunctionMode: 0o600}

	// The servers to move, as strict JSON.
	moved := map[string][]byte{}
	var order []string
	for _, k := range j.Keep {
		if servers.get(k) == nil {
			return nil, fmt.Errorf("-keep %s: %s has no server %q in %s", k, loc.File, k, loc.Describe())
		}
		if k == j.Name {
			return nil, fmt.Errorf("-keep %s: junction's entry is to be named %q too; choose another with -name", k, k)
		}
	}
	for _, m := range servers.members {
		raw := m.val.strict()
		if slices.Contains(j.Keep, m.key) {
			p.Kept = append(p.Kept, m.key)
			continue
		}
		if isJunction(raw, j.Executable, loc.File, junctionFile) {
			p.Replaced = append(p.Replaced, m.key)
			continue
		}
		if _, dup := moved[m.key]; !dup {
			order = append(order, m.key)
		}
		moved[m.key] = raw
	}
	if len(order) == 0 && len(p.Kept) > 0 {
		return nil, fmt.Errorf("%s: nothing to move: -keep keeps every server of %s", loc.File, loc.Describe())
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("%s: %s already runs only junction (%s); nothing to move. \"junction disconnect %s\" restores the servers it had", loc.File, loc.Host.Name, strings.Join(p.Replaced, ", "), loc.Host.ID)
	}

	// Junction's config: add the servers under "servers".
	if err := p.planJunctionConfig(order, moved, loc); err != nil {
		return nil, err
	}

	// The host's file: its servers object becomes junction alone.
	entry := map[string]any{"command": j.Command, "args": j.Args}
	if loc.Host.TypeField {
		entry["type"] = "stdio"
	}
	ev, err := json.Marshal(entry)
	if err != nil {
		return nil, err
	}
	var after []byte
	if len(p.Kept) == 0 {
		// The servers object becomes junction alone.
		obj := []byte("{" + mustJSON(j.Name) + ":" + orderedEntry(ev, loc.Host.TypeField) + "}")
		if after, err = setMember(parent, loc.Host.Key, obj); err != nil {
			return nil, err
		}
	} else {
		// Take out the moved and replaced servers, one at a time from the
		// end, then add junction; the kept ones stay as they are written.
		after = data
		for i := len(servers.members) - 1; i >= 0; i-- {
			if slices.Contains(j.Keep, servers.members[i].key) {
				continue
			}
			r, err := parseJSONC(after)
			if err != nil {
				return nil, err
			}
			_, sv, err := serversObject(loc, r)
			if err != nil {
				return nil, err
			}
			after = removeMember(sv, i)
		}
		r, err := parseJSONC(after)
		if err != nil {
			return nil, err
		}
		_, sv, err := serversObject(loc, r)
		if err != nil {
			return nil, err
		}
		if after, err = setMember(sv, j.Name, []byte(orderedEntry(ev, loc.Host.TypeField))); err != nil {
			return nil, err
		}
	}
	p.HostAfter = after
	sort.Strings(p.Replaced)
	sort.Strings(p.Kept)
	return p, nil
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// orderedEntry writes the entry's keys in the order people expect
// (type, command, args) rather than json.Marshal's sorted order.
func orderedEntry(ev []byte, typed bool) string {
	var m map[string]json.RawMessage
	json.Unmarshal(ev, &m)
	var parts []string
	if typed {
		parts = append(parts, `"type":`+string(m["type"]))
	}
	parts = append(parts, `"command":`+string(m["command"]), `"args":`+string(m["args"]))
	return "{" + strings.Join(parts, ",") + "}"
}

// isJunction reports whether a host entry is junction serving either
// the host's own file (the loop the self-reference guard stops), junction's
// config file (an earlier connect), or its default config: such an entry
// is replaced by the new one, not moved. Junction serving some other config
// is an ordinary server and is moved. The command is junction when it is
// exe (the same file) or is named junction.
func isJunction(raw []byte, exe, hostFile, junctionFile string) bool {
	var e struct {
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
	}
	if json.Unmarshal(raw, &e) != nil || e.Command == "" || len(e.Args) == 0 || e.Args[0] != "serve" {
		return false
	}
	base := strings.TrimSuffix(strings.ToLower(filepath.Base(e.Command)), ".exe")
	if !(exe != "" && sameFile(e.Command, exe)) && base != "junction" {
		return false
	}
	cfg := e.Env["JUNCTION_CONFIG"]
	for i := 1; i < len(e.Args); i++ {
		a := strings.TrimPrefix(strings.TrimPrefix(e.Args[i], "-"), "-")
		if a == "config" && i+1 < len(e.Args) {
			cfg = e.Args[i+1]
			i++
		} else if v, ok := strings.CutPrefix(a, "config="); ok {
			cfg = v
		}
	}
	return cfg == "" || cfg == hostFile || cfg == junctionFile || sameFile(cfg, hostFile) || sameFile(cfg, junctionFile)
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// planJunctionConfig adds the moved servers to junction's config file
// (JSON: edited in place; YAML: a servers section appended when it has
// none), and checks that the result is a config junction accepts.
func (p *ConnectPlan) planJunctionConfig(order []string, moved map[string][]byte, loc *Location) error {
	if err := loc.Confine(p.JunctionFile); err != nil {
		return fmt.Errorf("junction config: %w", err)
	}
	data, err := os.ReadFile(p.JunctionFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		data = nil
	case err != nil:
		return fmt.Errorf("junction config %s: %w", p.JunctionFile, err)
	default:
		p.JunctionBefore = data
		if fi, err := os.Stat(p.JunctionFile); err == nil {
			p.JunctionMode = fi.Mode().Perm()
		}
	}
	yaml := strings.HasSuffix(strings.ToLower(p.JunctionFile), ".yaml") || strings.HasSuffix(strings.ToLower(p.JunctionFile), ".yml")
	if data != nil {
		if _, err := config.Load(p.JunctionFile, func(string) string { return "x" }); err != nil {
			return fmt.Errorf("junction config %s does not load, so connect will not add to it: %v\n(fix it, or choose another file with -config)", p.JunctionFile, err)
		}
	}
	var after []byte
	if yaml {
		if data != nil && bytes.Contains(append([]byte("\n"), data...), []byte("\nservers:")) {
			return fmt.Errorf("junction config %s already has a servers section, and connect edits YAML only by appending one; add these servers to it yourself (junction config check shows the result), or use a .json file with -config", p.JunctionFile)
		}
		var b bytes.Buffer
		b.Write(data)
		if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "# moved from %s by junction connect %s\nservers:\n", loc.File, loc.Host.ID)
		for _, name := range order {
			// JSON is YAML: each entry in flow style, on one line.
			fmt.Fprintf(&b, "  %s: %s\n", mustJSON(name), compactJSON(moved[name]))
		}
		after = b.Bytes()
	} else {
		if data == nil {
			data = []byte("{}\n")
		}
		root, err := parseJSONC(data)
		if err != nil || root.kind != '{' {
			return fmt.Errorf("junction config %s is not a JSON object", p.JunctionFile)
		}
		var servers *jvalue
		key := "servers"
		if servers = root.get("servers"); servers == nil {
			if s := root.get("mcpServers"); s != nil {
				servers, key = s, "mcpServers"
			}
		}
		existing := map[string]json.RawMessage{} // strict JSON
		if servers != nil {
			for _, m := range servers.members {
				existing[m.key] = m.val.strict()
			}
		}
		// Check for names already taken before changing anything.
		var add []string
		for _, name := range order {
			if old, ok := existing[name]; ok {
				fields := serverDiff(old, moved[name])
				if len(fields) == 0 {
					p.Same = append(p.Same, name)
					continue
				}
				return fmt.Errorf("junction config %s already has a server %q that differs from %s's in %s; rename one of them (in either file), or make them the same, and run again", p.JunctionFile, name, loc.Host.Name, quoteFields(fields))
			}
			add = append(add, name)
		}
		if servers == nil {
			var b bytes.Buffer
			b.WriteString("{")
			for i, name := range add {
				if i > 0 {
					b.WriteString(",")
				}
				b.WriteString(mustJSON(name) + ":" + string(compactJSON(moved[name])))
			}
			b.WriteString("}")
			if after, err = setMember(root, key, b.Bytes()); err != nil {
				return err
			}
		} else {
			after = data
			for _, name := range add {
				r, err := parseJSONC(after)
				if err != nil {
					return err
				}
				if after, err = setMember(r.get(key), name, moved[name]); err != nil {
					return err
				}
			}
		}
		order = add
	}
	p.Moved = append(p.Moved, order...)
	sort.Strings(p.Moved)
	sort.Strings(p.Same)
	p.JunctionAfter = after
	// What junction will read must load: ${VAR} are set to a placeholder,
	// since the host may set them in its own environment.
	if err := checkLoads(p.JunctionFile, after); err != nil {
		return fmt.Errorf("junction config %s would not load with these servers, so nothing was changed:\n%v", p.JunctionFile, err)
	}
	return nil
}

// checkLoads loads data as the config file path would be loaded, from a
// copy of the same name in a directory of its own: as a file, so that
// ${workspaceFolder} and the other references that only a file has are
// known (their values do not matter here), without writing next to path.
func checkLoads(path string, data []byte) error {
	dir, err := os.MkdirTemp("", "junction-connect-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, filepath.Base(path))
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	_, err = config.Load(tmp, func(string) string { return "x" })
	if es, ok := err.(config.Errors); ok {
		for _, e := range es {
			e.File = "" // the copy's name means nothing to the user
		}
	}
	return err
}

// serverDiff compares two definitions of a server (strict JSON) as junction
// reads them, and returns the fields that differ, sorted; none when they
// are the same server. Key order, the hosts' spellings of a key ("type"
// for junction's "transport", "envFile" for "env_file") and what junction
// takes for a missing field do not count: a server without "type" that
// has a command is "stdio" (what Claude Code writes and Claude Desktop
// leaves out), one with a url is "http", and empty args or env are none.
func serverDiff(a, b []byte) []string {
	na, errA := normalServer(a)
	nb, errB := normalServer(b)
	if errA != nil || errB != nil {
		if bytes.Equal(compactJSON(a), compactJSON(b)) {
			return nil
		}
		return []string{"its definition"}
	}
	var fields []string
	for k := range na {
		if !reflect.DeepEqual(na[k], nb[k]) {
			fields = append(fields, k)
		}
	}
	for k := range nb {
		if _, ok := na[k]; !ok {
			fields = append(fields, k)
		}
	}
	sort.Strings(fields)
	return fields
}

// serverKeyAliases are the hosts' spellings of junction's server keys
// that connect may meet in a host file (see internal/config).
var serverKeyAliases = map[string]string{
	"type":          "transport",
	"transportType": "transport",
	"envFile":       "env_file",
	"serverUrl":     "url",
}

func normalServer(raw []byte) (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("not an object")
	}
	for alias, key := range serverKeyAliases {
		if v, ok := m[alias]; ok {
			if _, both := m[key]; !both {
				m[key] = v
			}
			delete(m, alias)
		}
	}
	if _, ok := m["transport"]; !ok {
		switch {
		case m["command"] != nil:
			m["transport"] = "stdio"
		case m["url"] != nil:
			m["transport"] = "http"
		}
	}
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			delete(m, k)
		case []any:
			if len(v) == 0 {
				delete(m, k)
			}
		case map[string]any:
			if len(v) == 0 {
				delete(m, k)
			}
		}
	}
	return m, nil
}

// quoteFields names fields for a message: "args", or "args" and "env".
func quoteFields(fields []string) string {
	q := make([]string, len(fields))
	for i, f := range fields {
		q[i] = fmt.Sprintf("%q", f)
		if f == "its definition" {
			q[i] = f
		}
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}

// Backup names: the host file's name, ".junction-backup-", a UTC time.
const backupInfix = ".junction-backup-"

// backupMeta is written next to each backup: what connect wrote, so that
// disconnect can tell whether the host file changed since.
type backupMeta struct {
	Host          string `json:"host"`
	Scope         string `json:"scope"`
	File          string `json:"file"`
	Time          string `json:"time"`
	WrittenSHA256 string `json:"written_sha256"`
	// WrittenServers is the servers object connect wrote, compact: when
	// the host changed other parts of its file since (Claude Code rewrites
	// ~/.claude.json all the time), disconnect puts back only the servers.
	WrittenServers string   `json:"written_servers,omitempty"`
	JunctionFile   string   `json:"junction_config"`
	Moved          []string `json:"moved"`
}

// Apply writes the plan: junction's config first (so the host never runs
// junction without its servers), then a backup of the host's file (its
// exact bytes and mode), then the host's file. It returns the backup's
// path.
func (p *ConnectPlan) Apply(now time.Time) (backup string, err error) {
	// The host file must be as it was read.
	cur, err := os.ReadFile(p.Loc.File)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p.Loc.File, err)
	}
	if !bytes.Equal(cur, p.HostBefore) {
		return "", fmt.Errorf("%s changed while connect was running; nothing was written; run again", p.Loc.File)
	}
	if err := p.Loc.confineHost(p.Loc.File); err != nil {
		return "", err
	}
	if err := p.Loc.Confine(p.JunctionFile); err != nil {
		return "", fmt.Errorf("junction config: %w", err)
	}
	if !bytes.Equal(p.JunctionBefore, p.JunctionAfter) {
		if err := os.MkdirAll(filepath.Dir(p.JunctionFile), 0o700); err != nil {
			return "", fmt.Errorf("junction config: %w", err)
		}
		if err := p.Loc.writeConfined(p.JunctionFile, p.JunctionAfter, p.JunctionMode); err != nil {
			return "", fmt.Errorf("junction config: %w", err)
		}
	}
	stamp := now.UTC().Format("20060102T150405.000Z")
	backup = p.Loc.File + backupInfix + strings.Replace(stamp, ".", "", 1)
	if err := p.Loc.writeHost(backup, p.HostBefore, p.HostMode); err != nil {
		return "", fmt.Errorf("backing up %s: %w", p.Loc.File, err)
	}
	sum := sha256.Sum256(p.HostAfter)
	meta, _ := json.MarshalIndent(backupMeta{Host: p.Loc.Host.ID, Scope: p.Loc.Scope, File: p.Loc.File, Time: now.UTC().Format(time.RFC3339),
		WrittenSHA256: hex.EncodeToString(sum[:]), WrittenServers: serversCompact(p.Loc, p.HostAfter), JunctionFile: p.JunctionFile, Moved: p.Moved}, "", "  ")
	if err := p.Loc.writeHost(backup+".json", append(meta, '\n'), 0o600); err != nil {
		return "", fmt.Errorf("backing up %s: %w", p.Loc.File, err)
	}
	if err := p.Loc.writeHost(p.Loc.File, p.HostAfter, p.HostMode); err != nil {
		return "", fmt.Errorf("%s: %w (the backup %s is intact)", p.Loc.File, err, backup)
	}
	return backup, nil
}

// DisconnectPlan is what "junction disconnect" would do: put a backup
// back.
type DisconnectPlan struct {
	Loc *Location
	// Backup is the backup to restore, Meta what connect recorded with it.
	Backup string
	Meta   backupMeta
	// Current is the host file now (nil if missing), Restored the backup.
	Current, Restored []byte
	Mode              fs.FileMode
	// Changed: the host file's servers are not what connect wrote;
	// restoring loses those changes (see Diff).
	Changed bool
	// ServersOnly: the host changed other parts of its file since connect;
	// Restored is the file as it is now with the backup's servers object,
	// so those changes are kept.
	ServersOnly bool
}

// Diff is the unified diff from the host's file now to the backup.
func (p *DisconnectPlan) Diff() string {
	return Unified(p.Loc.File, p.Loc.File, p.Current, p.Restored)
}

// Backups lists the backups of loc's file, newest first.
func Backups(loc *Location) ([]string, error) {
	matches, err := filepath.Glob(globEscape(loc.File) + backupInfix + "*")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range matches {
		if !strings.HasSuffix(m, ".json") {
			out = append(out, m)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(out))) // the stamps sort by time
	return out, nil
}

func globEscape(s string) string {
	return strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`).Replace(s)
}

// PlanDisconnect picks the backup to restore (backup, or the newest) and
// compares the host file with what connect wrote.
func PlanDisconnect(loc *Location, backup string) (*DisconnectPlan, error) {
	if err := loc.confineHost(loc.File); err != nil {
		return nil, err
	}
	if backup == "" {
		list, err := Backups(loc)
		if err != nil {
			return nil, err
		}
		if len(list) == 0 {
			return nil, fmt.Errorf("%s: no backup made by junction connect (%s*) to restore; was %s connected from this file?", loc.File, filepath.Base(loc.File)+backupInfix, loc.Host.Name)
		}
		backup = list[0]
	}
	if err := loc.confineHost(backup); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	p := &DisconnectPlan{Loc: loc, Backup: backup}
	var err error
	if p.Restored, err = os.ReadFile(backup); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	if fi, err := os.Stat(backup); err == nil {
		p.Mode = fi.Mode().Perm()
	}
	if mb, err := os.ReadFile(backup + ".json"); err == nil {
		json.Unmarshal(mb, &p.Meta)
	}
	cur, err := os.ReadFile(loc.File)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		p.Changed = true
	case err != nil:
		return nil, fmt.Errorf("%s: %w", loc.File, err)
	default:
		p.Current = cur
		if fi, err := os.Stat(loc.File); err == nil {
			p.Mode = fi.Mode().Perm()
		}
		sum := sha256.Sum256(cur)
		p.Changed = p.Meta.WrittenSHA256 == "" || hex.EncodeToString(sum[:]) != p.Meta.WrittenSHA256
		if bytes.Equal(cur, p.Restored) {
			p.Changed = false
		}
		if p.Changed && p.Meta.WrittenServers != "" && serversCompact(loc, cur) == p.Meta.WrittenServers {
			if merged, ok := restoreServers(loc, cur, p.Restored); ok {
				p.Restored, p.Changed, p.ServersOnly = merged, false, true
			}
		}
	}
	return p, nil
}

// Apply restores the backup over the host file, atomically. The backup
// is kept.
func (p *DisconnectPlan) Apply() error {
	if err := p.Loc.writeHost(p.Loc.File, p.Restored, p.Mode); err != nil {
		return fmt.Errorf("%s: %w (the backup %s is intact)", p.Loc.File, err, p.Backup)
	}
	return nil
}

// serversCompact returns the servers object of a host file as compact
// JSON, or "" if the file has none.
func serversCompact(loc *Location, data []byte) string {
	root, err := parseJSONC(data)
	if err != nil || root.kind != '{' {
		return ""
	}
	_, servers, err := serversObject(loc, root)
	if err != nil || servers == nil {
		return ""
	}
	return string(servers.strict())
}

// restoreServers returns cur with its servers object replaced by the
// backup's, byte for byte.
func restoreServers(loc *Location, cur, backup []byte) ([]byte, bool) {
	cr, err := parseJSONC(cur)
	if err != nil || cr.kind != '{' {
		return nil, false
	}
	br, err := parseJSONC(backup)
	if err != nil || br.kind != '{' {
		return nil, false
	}
	_, cs, err := serversObject(loc, cr)
	if err != nil || cs == nil {
		return nil, false
	}
	_, bs, err := serversObject(loc, br)
	if err != nil || bs == nil {
		return nil, false
	}
	return replaceValue(cs, bs), true
}
