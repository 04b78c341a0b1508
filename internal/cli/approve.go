package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/atomicfile"
	"github.com/junction-mcp/junction/internal/config"
	"github.com/junction-mcp/junction/internal/daemon"
	"github.com/junction-mcp/junction/internal/hostconfig"
)

const approveAbout = `
Take a server out of quarantine. "junction add" writes every server it
adds from a registry with "quarantine": true: "junction serve" does not
start it until it is vetted ("junction tools list -server NAME" starts it
here and lists its tools) and approved.

junction approve starts the server in-process, with the rest of the hub
as "junction lock" builds it, and reads its tools. Then it pins them in
the lock file (-lock, else the config's lock:, else junction.lock.json
beside the config, which approve then names in the config as lock:, so
that serve checks the pins):
the server's entries are added, or replace the ones it had; the other
sources' entries stay. A lock file that does not exist yet is written
whole, every tool the hub serves, as "junction lock" would. Last, it
removes "quarantine": true from the server's entry in the config file,
keeping the file's comments and layout, atomically.

It shows the tools and the diff of the config file, then asks before
writing when it runs on a terminal; without a terminal it only shows what
it would do (a dry run), and -yes writes without asking. A running
"junction serve" on that config file starts the server on its own, from
its config watcher.

Errors, with nothing written: a name that is not a server of the config,
a server that is not in quarantine, a server that does not start (its
error is shown).

The config file: -config, else $JUNCTION_CONFIG, else the file "junction
add" and "junction connect" use (junction/junction.json in your config
directory).

Examples:
  junction tools list -server server-everything
  junction approve server-everything
  junction approve server-everything -config ./junction.json -yes`

func runApprove(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "approve", "NAME [-config FILE] [-lock FILE] [-yes] [-o json]", approveAbout)
	cfgPath := fs.String("config", "", "junction's config `file` (default $"+EnvConfig+", else junction/junction.json in your config directory)")
	lockFlag := fs.String("lock", "", "write the pins to this lock `file` (default: the config's lock:, else "+DefaultLockFile+" beside the config, added to it as lock:)")
	dataDir := fs.String("data-dir", "", "`directory` for durable state (default: the user's state directory)")
	yes := fs.Bool("yes", false, "write without asking")
	format := outputFlags(fs, false)
	pos, err := parseInterspersed(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("approve needs one NAME, a server of the config in quarantine, got %d arguments", len(pos))
	}
	name := pos[0]
	path, err := addConfigPath(env, *cfgPath)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("junction config %s: %w", path, err)
	}
	hf := hubFlags{configPath: path, logLevel: "warn", logFormat: "text", quiet: true, ignoreLock: true,
		dataDir: *dataDir, vet: name, set: map[string]bool{}}
	cfg, _, err := hf.loadConfig(env)
	if err != nil {
		return err
	}
	s, ok := cfg.Servers[name]
	switch {
	case !ok:
		q := cfg.Quarantined()
		hint := "it has none in quarantine"
		if len(q) > 0 {
			hint = "in quarantine: " + strings.Join(q, ", ")
		}
		return fmt.Errorf("junction config %s has no server %q (%s)", path, name, hint)
	case !s.Quarantine:
		return fmt.Errorf("server %q of %s is not in quarantine: there is nothing to approve (\"junction lock\" pins the tools of the servers served)", name, path)
	case s.Disabled:
		return fmt.Errorf("server %q of %s is disabled (disabled: true); enable it before approving it", name, path)
	}
	// The lock file: -lock, else the config's lock:, else one beside the
	// config, which the config then names (lock:), so that serve checks
	// the pins.
	lockPath := *lockFlag
	addLock := lockPath == "" && cfg.Lock.Path == ""
	if lockPath == "" {
		lockPath = cmpOr(cfg.Lock.Path, filepath.Join(filepath.Dir(path), DefaultLockFile))
	}
	if abs, err := filepath.Abs(lockPath); err == nil {
		lockPath = abs
	}
	lockNamed := addLock || cfg.Lock.Path != ""
	// The approved config, worked out (and checked) before anything
	// starts.
	after, err := unquarantine(path, data, cfg, name, addLock)
	if err != nil {
		return err
	}

	// Start the hub as "junction lock" does, the server with it; the
	// JUNCTION_TOOLS selection does not apply.
	quiet := *env
	quiet.Getenv = func(k string) string {
		if k == EnvTools {
			return ""
		}
		return env.Getenv(k)
	}
	d, err := hf.buildAll(ctx, &quiet)
	if err != nil {
		return fmt.Errorf("approve %s: %w; nothing was written", name, err)
	}
	served := d.View.Tools()
	d.Close()
	var pins []junction.ManifestTool
	var tools []junction.ToolInfo
	for _, t := range served {
		if t.Source == name {
			pins = append(pins, junction.PinTool(t.Tool, name))
			tools = append(tools, t)
		}
	}
	lock, whole, err := approvedLock(lockPath, name, pins, served)
	if err != nil {
		return err
	}
	diff := hostconfig.Unified(path, path, data, after)

	if format.json {
		report := approveReport{Name: name, Config: path, Lock: lockPath, LockNamed: lockNamed, LockWhole: whole, Diff: diff, Tools: []string{}}
		for _, t := range tools {
			report.Tools = append(report.Tools, t.Tool.Name)
		}
		if *yes {
			if err := writeApproval(path, data, after, lockPath, lock); err != nil {
				return err
			}
			report.Written = true
		}
		return writeJSON(env.Stdout, report)
	}

	out := env.Stdout
	fmt.Fprintf(out, "%s of %s serves %d tool%s:\n", name, path, len(tools), plural(len(tools)))
	tw := tabwriter.NewWriter(out, 0, 0, 3, ' ', 0)
	for _, t := range tools {
		fmt.Fprintf(tw, "  %s\t%s\n", t.Tool.Name, printable(firstLine(t.Tool.Description)))
	}
	tw.Flush()
	fmt.Fprintln(out)
	fmt.Fprint(out, diff)
	fmt.Fprintln(out)
	if whole {
		fmt.Fprintf(out, "lock file %s (new): pins every tool the hub serves, %d, these among them, as \"junction lock\" would\n", lockPath, len(lock.Tools))
	} else {
		fmt.Fprintf(out, "lock file %s: pins these %d tool%s of %s; the other sources' pins stay\n", lockPath, len(pins), plural(len(pins)), name)
	}
	if !confirm(env, *yes, fmt.Sprintf("Approve %q: pin its tools and take it out of quarantine?", name), approveLine(name, path)) {
		return nil
	}

	if err := writeApproval(path, data, after, lockPath, lock); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nApproved %s: its tools are pinned in %s, and it is out of quarantine in %s. A running \"junction serve -config %s\" starts it on its own.\n",
		name, lockPath, path, shellQuote(path))
	if !lockNamed {
		fmt.Fprintf(out, "The config names no lock file, so junction serve does not check these pins yet: add lock: %s to it (or write them elsewhere with -lock).\n", lockPath)
	}
	return nil
}

type approveReport struct {
	Name   string `json:"name"`
	Config string `json:"config"`
	Lock   string `json:"lock"`
	// LockNamed is whether the config (or -lock) names the lock file;
	// LockWhole, whether the lock file is new and pins every tool.
	LockNamed bool     `json:"lock_named"`
	LockWhole bool     `json:"lock_whole"`
	Tools     []string `json:"tools"`
	Diff      string   `json:"diff"`
	Written   bool     `json:"written"`
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// approvedLock is the lock file with the server's pins: the file at path
// with name's entries (and any entry of the same tool names) replaced by
// pins, or, when there is no file yet, a new one pinning every tool the
// hub serves (whole is then true).
func approvedLock(path, name string, pins []junction.ManifestTool, served []junction.ToolInfo) (m *junction.Manifest, whole bool, err error) {
	m, err = config.ReadLockFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return junction.NewManifest(served), true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("lock file %s: %w; nothing was written", path, err)
	}
	names := map[string]bool{}
	for _, p := range pins {
		names[p.Name] = true
	}
	m.Tools = slices.DeleteFunc(m.Tools, func(t junction.ManifestTool) bool { return t.Source == name || names[t.Name] })
	// The pins go where the hub serves the tools, before the first
	// pinned tool served after them, so that "junction selftest" finds
	// the lock in serving order.
	later := map[string]bool{}
	seen := false
	for _, t := range served {
		switch {
		case t.Source == name:
			seen = true
		case seen:
			later[t.Tool.Name] = true
		}
	}
	at := len(m.Tools)
	for i, t := range m.Tools {
		if later[t.Name] {
			at = i
			break
		}
	}
	m.Tools = slices.Insert(m.Tools, at, pins...)
	return m, false, nil
}

// writeApproval writes the lock file, then the approved config file, if
// the config file is still as approve read it. Both writes are atomic.
func writeApproval(path string, before, after []byte, lockPath string, lock *junction.Manifest) error {
	cur, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("junction config %s: %w", path, err)
	}
	if !bytes.Equal(cur, before) {
		return fmt.Errorf("junction config %s changed while approve was running; nothing was written; run again", path)
	}
	if err := config.WriteLockFile(lockPath, lock); err != nil {
		return fmt.Errorf("lock file %s: %w; nothing was written", lockPath, err)
	}
	mode := fs.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := atomicfile.Write(path, after, mode); err != nil {
		return fmt.Errorf("junction config %s: %w (the file is unchanged, the server still in quarantine; the lock file %s has its pins)", path, err, lockPath)
	}
	return nil
}

// quarantineKey matches a quarantine: true member, JSON or YAML.
var quarantineKey = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:"quarantine"|'quarantine'|\bquarantine)[ \t]*:[ \t]*true\b`)
})

// unquarantine returns the config file's bytes without the server's
// "quarantine": true, edited in place as a person would: the member is
// removed with its comma (and its line, when nothing else is on it), or,
// where that does not give the same config, its true becomes false.
// Every other byte is kept. Each candidate edit is loaded as a junction
// config and must differ from the file only in that server's quarantine.
func unquarantine(path string, data []byte, cfg *config.Config, name string, addLock bool) ([]byte, error) {
	ec, err := newEditChecker(path)
	if err != nil {
		return nil, err
	}
	defer ec.close()
	want, err := ec.load(data)
	if err != nil {
		return nil, fmt.Errorf("junction config %s: %w", path, err)
	}
	if s := want.Servers[name]; s != nil {
		c := *s
		c.Quarantine = false
		want.Servers[name] = &c
	}
	if addLock {
		want.Lock.Path = filepath.Join(ec.dir, DefaultLockFile)
		if data, err = withLockKey(data, want, ec); err != nil {
			return nil, fmt.Errorf("junction config %s: %w", path, err)
		}
	}
	same := func(b []byte) bool { return ec.same(want, b) }
	// The matches on the line the key was read from first, then the
	// others.
	line := cfg.Line(cfg.FieldPath("server", name) + ".quarantine")
	matches := quarantineKey().FindAllIndex(data, -1)
	slices.SortStableFunc(matches, func(a, b []int) int {
		la, lb := lineOf(data, a[0]) == line, lineOf(data, b[0]) == line
		switch {
		case la && !lb:
			return -1
		case lb && !la:
			return 1
		}
		return 0
	})
	for _, m := range matches {
		for _, edit := range []func([]byte, int, int) []byte{removeWithNextComma, removeWithPrevComma, removeAlone, setFalse} {
			if b := edit(data, m[0], m[1]); b != nil && same(b) {
				return b, nil
			}
		}
	}
	return nil, fmt.Errorf("junction config %s: could not find the quarantine: true of server %q to remove; remove it yourself (junction config check checks the file), or run approve again", path, name)
}

// editChecker tells whether an edit of a config file gives the config
// wanted: each candidate is loaded as the file would be (under its own
// name, in a temporary directory, every ${VAR} read as "x"), and must
// have the same servers as want, field for field, and no other change.
type editChecker struct{ dir, base string }

func newEditChecker(path string) (*editChecker, error) {
	dir, err := os.MkdirTemp("", "junction-edit-")
	if err != nil {
		return nil, err
	}
	return &editChecker{dir: dir, base: filepath.Base(path)}, nil
}

func (c *editChecker) close() { os.RemoveAll(c.dir) }

func (c *editChecker) load(b []byte) (*config.Config, error) {
	tmp := filepath.Join(c.dir, c.base)
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return nil, err
	}
	return config.Load(tmp, func(string) string { return "x" })
}

func (c *editChecker) same(want *config.Config, b []byte) bool {
	got, err := c.load(b)
	if err != nil || len(got.Servers) != len(want.Servers) {
		return false
	}
	for n, s := range want.Servers {
		if !reflect.DeepEqual(s, got.Servers[n]) {
			return false
		}
	}
	delta := config.Diff(want, got)
	return delta.Empty()
}

// withLockKey returns the config file with a top-level lock key naming
// junction.lock.json beside it, as want has it (and as the server still
// is in data): in a JSON object, as its first member; in YAML, as a line
// at the end.
func withLockKey(data []byte, want *config.Config, ec *editChecker) ([]byte, error) {
	check := *want
	check.Servers = maps.Clone(want.Servers)
	if cur, err := ec.load(data); err == nil {
		check.Servers = cur.Servers
	}
	member := `"lock": "` + DefaultLockFile + `"`
	var cands [][]byte
	if i := bytes.IndexByte(data, '{'); i >= 0 && strings.TrimSpace(string(data[:i])) == "" {
		cands = append(cands, // with a comma before the next member, and alone in the object
			slices.Concat(data[:i+1], []byte("\n  "+member+","), data[i+1:]),
			slices.Concat(data[:i+1], []byte("\n  "+member), data[i+1:]))
	} else {
		sep := ""
		if len(data) > 0 && data[len(data)-1] != '\n' {
			sep = "\n"
		}
		cands = append(cands, slices.Concat(data, []byte(sep+"lock: "+DefaultLockFile+"\n")))
	}
	for _, b := range cands {
		if ec.same(&check, b) {
			return b, nil
		}
	}
	return nil, fmt.Errorf("could not add lock: %s to it; add it yourself (or give -lock FILE), then approve again", DefaultLockFile)
}

// lineOf is the 1-based line of offset.
func lineOf(data []byte, offset int) int { return bytes.Count(data[:offset], []byte("\n")) + 1 }

// removeWithNextComma removes data[start:end] and the comma after it on
// the same line, with the blanks after that; then the line, if nothing
// else is left on it. Nil when no comma follows.
func removeWithNextComma(data []byte, start, end int) []byte {
	i := skipBlanks(data, end)
	if i >= len(data) || data[i] != ',' {
		return nil
	}
	return dropBlankLine(data, start, skipBlanks(data, i+1))
}

// removeAlone removes data[start:end] (a YAML member), with its line if
// nothing else is left on it.
func removeAlone(data []byte, start, end int) []byte {
	return dropBlankLine(data, start, end)
}

// removeWithPrevComma removes data[start:end] and the comma before it
// (past blanks and line breaks): the last member of a JSON object.
func removeWithPrevComma(data []byte, start, end int) []byte {
	i := start
	for i > 0 && strings.IndexByte(" \t\r\n", data[i-1]) >= 0 {
		i--
	}
	if i == 0 || data[i-1] != ',' {
		return nil
	}
	return slices.Concat(data[:i-1], data[end:])
}

// setFalse turns the match's true into false.
func setFalse(data []byte, start, end int) []byte {
	return slices.Concat(data[:end-len("true")], []byte("false"), data[end:])
}

func skipBlanks(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t') {
		i++
	}
	return i
}

// dropBlankLine removes data[start:end], and the whole line when only
// blanks would be left on it, or blanks and a comment (# or //), which
// is taken to be about the member removed.
func dropBlankLine(data []byte, start, end int) []byte {
	ls := start
	for ls > 0 && (data[ls-1] == ' ' || data[ls-1] == '\t') {
		ls--
	}
	le := skipBlanks(data, end)
	if rest := data[le:]; bytes.HasPrefix(rest, []byte("#")) || bytes.HasPrefix(rest, []byte("//")) {
		if ls == 0 || data[ls-1] == '\n' {
			if nl := bytes.IndexByte(rest, '\n'); nl >= 0 {
				le += nl
			} else {
				le = len(data)
			}
		}
	}
	if (ls == 0 || data[ls-1] == '\n') && (le == len(data) || data[le] == '\n' || data[le] == '\r') {
		if le < len(data) && data[le] == '\r' {
			le++
		}
		if le < len(data) && data[le] == '\n' {
			le++
		}
		return slices.Concat(data[:ls], data[le:])
	}
	return slices.Concat(data[:start], data[end:])
}

// vetConfig is the config the operator commands build (tools list
// -server, approve): the server f.vet runs even in quarantine, and with
// f.only the other servers and the plugins are left out. cfg itself is
// not changed.
func (f *hubFlags) vetConfig(env *Env, cfg *config.Config, path string) (*config.Config, error) {
	name := f.vet
	if cfg == nil {
		if f.only {
			return nil, nil // a pack, checked once built
		}
		return nil, usageErrorf("no config file: give -config FILE or set %s", EnvConfig)
	}
	if f.only {
		known := slices.Concat(slices.Collect(maps.Keys(cfg.Servers)), slices.Collect(maps.Keys(cfg.Plugins)), slices.Collect(maps.Keys(cfg.Packs)))
		if cfg.Packs == nil {
			known = append(known, daemon.DefaultPacks()...)
		}
		if !slices.Contains(known, name) {
			slices.Sort(known)
			return nil, usageErrorf("no server, plugin or pack %q in %s (there are: %s)", name, path, strings.Join(known, ", "))
		}
	}
	c := *cfg
	c.Servers, c.Plugins = maps.Clone(cfg.Servers), maps.Clone(cfg.Plugins)
	if s, ok := c.Servers[name]; ok {
		if s.Disabled {
			return nil, fmt.Errorf("server %q of %s is disabled (disabled: true)", name, path)
		}
		if s.Quarantine {
			v := *s
			v.Quarantine = false
			c.Servers[name] = &v
			// Vetting shows every tool: no drift policy hides one.
			f.ignoreLock = true
			if f.only {
				fmt.Fprintf(env.Stderr, "junction: %s is in quarantine: started here for you to vet it; junction serve does not start it until %q\n", name, approveLine(name, path))
			}
		}
	}
	if f.only {
		for n, s := range c.Servers {
			if n != name && !s.Disabled {
				v := *s
				v.Disabled = true
				c.Servers[n] = &v
			}
		}
		for n, p := range c.Plugins {
			if n != name && !p.Disabled {
				v := *p
				v.Disabled = true
				c.Plugins[n] = &v
			}
		}
	}
	return &c, nil
}

// vetStarted checks that the source name of the built hub d is there
// and, for a server, connected; else its error.
func vetStarted(d *daemon.Daemon, name, path string) error {
	st := d.Status()
	var names []string
	for _, s := range st.Sources {
		if s.Name != name {
			names = append(names, s.Name)
			continue
		}
		if s.Kind != daemon.KindUpstream || s.State == "connected" {
			return nil
		}
		why := s.Error
		if why == "" {
			why = fmt.Sprintf("it did not connect within %v (state %s)", upstreamWait, s.State)
		}
		return fmt.Errorf("server %q did not start: %s", name, why)
	}
	where := ""
	if path != "" {
		where = " in " + path
	}
	return usageErrorf("no server, plugin or pack %q%s (there are: %s)", name, where, strings.Join(names, ", "))
}
