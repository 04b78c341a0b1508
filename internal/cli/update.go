package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/atomicfile"
	"github.com/junction-mcp/junction/internal/config"
	"github.com/junction-mcp/junction/internal/hostconfig"
	"github.com/junction-mcp/junction/internal/registry"
)

const registryCheckAbout = `
Check the servers of junction's config that came from a registry (those
with a registry: key, as "junction add" writes it) against their
registries: is the pinned version still active, or deprecated or deleted
(with the registry's reason), and is there a newer one. Each server is
asked of the registry it came from (its registry.url), else of the
configured registries.

Exit status: 0 when every pinned version is active and the latest; 1
when one is deprecated, deleted, gone from its registry or has a newer
version, or a registry could not answer; 2 for a usage error.
"junction update NAME" moves a server to the latest version.

The config file: -config, else $JUNCTION_CONFIG, else junction's own
(junction/junction.json in your config directory).
` + registryNote + `

Examples:
  junction registry check
  junction registry check -config ./junction.json -o json`

type checkRow struct {
	Server   string `json:"server"` // the name in junction's config
	Name     string `json:"name"`   // the registry's name
	Version  string `json:"version"`
	Registry string `json:"registry"`
	Status   string `json:"status"` // active, deprecated, deleted, missing, error
	Message  string `json:"message,omitempty"`
	Latest   string `json:"latest,omitempty"`
	Newer    bool   `json:"newer"`
	Error    string `json:"error,omitempty"`
}

func (r *checkRow) needsAttention() bool {
	return r.Status != registry.StatusActive || r.Newer
}

func runRegistryCheck(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "registry check", "[-config FILE] [-registry URL]... [-o json]", registryCheckAbout)
	var rf registryFlags
	rf.register(fs)
	cfgPath := fs.String("config", "", "junction's config `file` (default $"+EnvConfig+", else junction/junction.json in your config directory)")
	format := outputFlags(fs, false)
	pos, err := parseInterspersed(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErrorf("registry check takes no arguments, got %q (it checks every server of the config that came from a registry)", pos)
	}
	path, err := addConfigPath(env, *cfgPath)
	if err != nil {
		return err
	}
	cfg, err := config.Load(path, func(k string) string { return cmpOr(env.Getenv(k), "x") })
	if err != nil {
		return fmt.Errorf("junction config %s: %w", path, err)
	}
	var names []string
	for n, s := range cfg.Servers {
		if s.Registry != nil {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	rows := []checkRow{}
	for _, n := range names {
		ref := cfg.Servers[n].Registry
		row := checkRow{Server: n, Name: ref.Name, Version: ref.Version, Registry: ref.URL}
		set, err := refRegistries(env, &rf, cfg, ref)
		if err != nil {
			return err
		}
		if row.Registry == "" {
			row.Registry = strings.Join(set.URLs(), ", ")
		}
		checkOne(ctx, set, ref, &row)
		rows = append(rows, row)
	}

	attention := 0
	for _, r := range rows {
		if r.needsAttention() {
			attention++
		}
	}
	if format.json {
		if err := writeJSON(env.Stdout, map[string]any{"config": path, "servers": rows, "ok": attention == 0}); err != nil {
			return err
		}
	} else {
		out := env.Stdout
		if len(rows) == 0 {
			fmt.Fprintf(out, "%s has no server from a registry (\"junction add NAME\" adds one).\n", path)
			return nil
		}
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "SERVER\tPINNED\tSTATUS\tLATEST\tREGISTRY")
		for _, r := range rows {
			status := r.Status
			if r.Message != "" {
				status += ": " + clean(r.Message)
			}
			if r.Error != "" {
				status += ": " + r.Error
			}
			latest := r.Latest
			if r.Newer {
				latest += " (newer)"
			}
			fmt.Fprintf(tw, "%s\t%s@%s\t%s\t%s\t%s\n", r.Server, clean(r.Name), clean(r.Version), status, cmpOr(clean(latest), "-"), r.Registry)
		}
		tw.Flush()
		for _, r := range rows {
			switch {
			case r.Status == "error":
			case r.Newer:
				fmt.Fprintf(out, "%s: %s is out; \"junction update %s -config %s\" moves the pin\n", r.Server, clean(r.Latest), shellQuote(r.Server), shellQuote(path))
			case r.needsAttention():
				fmt.Fprintf(out, "%s: the pinned version is %s and there is no newer one; replace the server, or keep it knowingly\n", r.Server, r.Status)
			}
		}
	}
	if attention > 0 {
		return &ExitError{Code: exitFailure, Err: fmt.Errorf("registry check: %d of %d servers need attention", attention, len(rows))}
	}
	return nil
}

// refRegistries is where a server's registry entry is asked: the
// registry it came from, else the configured ones.
func refRegistries(env *Env, rf *registryFlags, cfg *config.Config, ref *config.RegistryRef) (registry.Set, error) {
	if ref.URL != "" && len(rf.urls) == 0 {
		s, err := registry.NewSet([]string{ref.URL})
		if err != nil {
			return nil, fmt.Errorf("registry.url of %s: %w", ref.Name, err)
		}
		return s, nil
	}
	return rf.set(env, cfg)
}

// checkOne fills row with what the registries say of ref's version and
// of the latest.
func checkOne(ctx context.Context, set registry.Set, ref *config.RegistryRef, row *checkRow) {
	cur, err := set.Get(ctx, ref.Name, ref.Version)
	switch {
	case errors.Is(err, registry.ErrNotFound):
		row.Status, row.Message = "missing", "the registry no longer has this version"
	case err != nil:
		row.Status, row.Error = "error", err.Error()
		return
	default:
		row.Status, row.Message = cur.Status(), cur.StatusMessage()
	}
	latest, err := set.Get(ctx, ref.Name, "")
	switch {
	case errors.Is(err, registry.ErrNotFound):
	case err != nil:
		row.Status, row.Error = "error", err.Error()
	default:
		row.Latest = latest.Server.Version
		row.Newer = latest.Server.Version != ref.Version && latest.Status() == registry.StatusActive
	}
}

const updateAbout = `
Move a server that came from a registry (it has a registry: key, as
"junction add" writes it) to another version: the latest, or @VERSION.
The entry's pin moves (the npm, PyPI or OCI package's version in its
args, or a remote's URL) and so does registry.version; every other value
of the entry (environment, headers, arguments, sandbox, tool filters) and
every other byte of the file stay as they are.

Before writing, update starts the new version in-process, as "junction
tools list -server NAME" does, and shows its tools as a drift diff
against the pins of the lock file (-lock, else the config's lock:, else
junction.lock.json), or, without pins for the server, against the tools
the current version serves. Then it shows the diff of the config file
and asks, on a terminal; without one it is a dry run, and -yes writes.
Writing replaces the server's pins in the lock file with the new
version's, in place, when the file has pins for it and the server is not
in quarantine: updating is approving the new tools. A server still in
quarantine keeps it ("junction approve NAME" then pins its tools).

Refused, with nothing written: a server that did not come from a
registry, a version the registry marks deprecated or deleted (with the
registry's reason), a version whose package or remote is not the one the
entry runs, a new version that needs a value the entry does not set, and
a new version that does not start.
` + registryNote + `

Examples:
  junction update server-memory
  junction update server-memory@2026.2.1 -config ./junction.json -yes`

func runUpdate(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "update", "NAME[@VERSION] [-config FILE] [-lock FILE] [-yes] [-registry URL]... [-o json]", updateAbout)
	var rf registryFlags
	rf.register(fs)
	cfgPath := fs.String("config", "", "junction's config `file` (default $"+EnvConfig+", else junction/junction.json in your config directory)")
	lockFlag := fs.String("lock", "", "the lock `file` with the server's pins (default: the config's lock:, else "+DefaultLockFile+")")
	dataDir := fs.String("data-dir", "", "`directory` for durable state (default: the user's state directory)")
	yes := fs.Bool("yes", false, "write without asking")
	format := outputFlags(fs, false)
	pos, err := parseInterspersed(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("update needs one NAME[@VERSION]: a server of junction's config that came from a registry, got %d arguments", len(pos))
	}
	name, version, _ := strings.Cut(pos[0], "@")
	path, err := addConfigPath(env, *cfgPath)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("junction config %s: %w", path, err)
	}
	cfg, err := config.Load(path, env.Getenv)
	if err != nil {
		return fmt.Errorf("junction config %s: %w", path, err)
	}
	s, ok := cfg.Servers[name]
	switch {
	case !ok:
		return fmt.Errorf("junction config %s has no server %q", path, name)
	case s.Registry == nil:
		return fmt.Errorf("server %q of %s did not come from a registry (it has no registry: key), so update cannot tell what to move; \"junction add NAME -name OTHER\" adds a registry server beside it", name, path)
	}
	ref := s.Registry
	set, err := refRegistries(env, &rf, cfg, ref)
	if err != nil {
		return err
	}
	found, err := set.Get(ctx, ref.Name, version)
	if err != nil {
		return err
	}
	next := &found.Server
	if st := found.Status(); st != registry.StatusActive {
		why := "the registry gives no reason"
		if m := found.StatusMessage(); m != "" {
			why = "the registry says: " + clean(m)
		}
		return fmt.Errorf("%s@%s is %s in %s (%s); update does not move to it", next.Name, next.Version, st, found.Registry, why)
	}
	if next.Version == ref.Version {
		fmt.Fprintf(env.Stdout, "%s is at %s@%s already, the %s version in %s.\n", name, ref.Name, ref.Version, map[bool]string{true: "latest", false: "asked"}[version == ""], found.Registry)
		return nil
	}
	move, err := pinMove(s, next)
	if err != nil {
		return fmt.Errorf("update %s to %s@%s: %w; nothing was written", name, next.Name, next.Version, err)
	}
	after, err := movedConfig(path, data, name, move, next.Version)
	if err != nil {
		return err
	}

	lockPath := cmpOr(*lockFlag, cmpOr(cfg.Lock.Path, DefaultLockFile))
	if abs, err := filepath.Abs(lockPath); err == nil {
		lockPath = abs
	}
	lock, err := config.ReadLockFile(lockPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("lock file %s: %w; nothing was written", lockPath, err)
	}
	var pinned []junction.ManifestTool
	if lock != nil {
		for _, t := range lock.Tools {
			if t.Source == name {
				pinned = append(pinned, t)
			}
		}
	}

	// The new version's tools, and the old ones where the lock has none.
	hf := hubFlags{configPath: path, logLevel: "warn", logFormat: "text", quiet: true, ignoreLock: true,
		dataDir: *dataDir, vet: name, only: true, set: map[string]bool{}}
	newTools, err := hf.vetTools(ctx, env, cfg, path, name, func(s *config.Server) { move.apply(s) })
	if err != nil {
		return fmt.Errorf("update %s: %s@%s: %w; nothing was written", name, next.Name, next.Version, err)
	}
	against := fmt.Sprintf("the pins in %s", lockPath)
	before := &junction.Manifest{Version: junction.ManifestVersion, Tools: pinned}
	if len(pinned) == 0 {
		against = "the tools of " + ref.Version
		old, err := hf.vetTools(ctx, env, cfg, path, name, nil)
		if err != nil {
			return fmt.Errorf("update %s: the current version %s: %w; nothing was written", name, ref.Version, err)
		}
		before.Tools = old
	}
	drift := before.Compare(&junction.Manifest{Version: junction.ManifestVersion, Tools: newTools})
	repin := len(pinned) > 0 && !s.Quarantine
	diff := hostconfig.Unified(path, path, data, after)

	if format.json {
		report := updateReport{Name: name, Server: next.Name, From: ref.Version, To: next.Version, Registry: found.Registry, Config: path,
			Diff: diff, Against: against, Added: drift.Added, Removed: drift.Removed, Changed: drift.Changed, Reordered: drift.Reordered,
			Lock: lockPath, Repin: repin, Quarantine: s.Quarantine}
		if *yes {
			if err := writeUpdate(path, data, after, lockPath, lock, name, newTools, repin); err != nil {
				return err
			}
			report.Written = true
		}
		return writeJSON(env.Stdout, report)
	}
	out := env.Stdout
	fmt.Fprintf(out, "%s: %s %s -> %s (from %s)\n", name, next.Name, ref.Version, next.Version, found.Registry)
	fmt.Fprintf(out, "  runs: %s\n\n", move.what)
	fmt.Fprint(out, diff)
	fmt.Fprintf(out, "\nits %d tool%s against %s:\n", len(newTools), plural(len(newTools)), against)
	if drift.Empty() {
		fmt.Fprintln(out, "  no change")
	} else {
		for _, l := range strings.Split(strings.TrimRight(drift.String(), "\n"), "\n") {
			fmt.Fprintf(out, "  %s\n", l)
		}
	}
	switch {
	case repin:
		fmt.Fprintf(out, "lock file %s: the server's %d pins are replaced by these %d tools\n", lockPath, len(pinned), len(newTools))
	case s.Quarantine:
		fmt.Fprintf(out, "%s stays in quarantine: vet it, then \"%s\"\n", name, approveLine(name, path))
	default:
		fmt.Fprintf(out, "the lock file %s has no pins for %s; it is not changed\n", lockPath, name)
	}
	if !confirm(env, *yes, fmt.Sprintf("Update %q to %s?", name, next.Version), "junction update "+shellQuote(pos[0])+" -config "+shellQuote(path)) {
		return nil
	}

	if err := writeUpdate(path, data, after, lockPath, lock, name, newTools, repin); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nUpdated %s to %s in %s. A running \"junction serve -config %s\" restarts it on its own.\n", name, next.Version, path, shellQuote(path))
	return nil
}

type updateReport struct {
	Name       string                `json:"name"`
	Server     string                `json:"server"`
	From       string                `json:"from"`
	To         string                `json:"to"`
	Registry   string                `json:"registry"`
	Config     string                `json:"config"`
	Diff       string                `json:"diff"`
	Against    string                `json:"against"`
	Added      []string              `json:"added"`
	Removed    []string              `json:"removed"`
	Changed    []junction.ToolChange `json:"changed"`
	Reordered  bool                  `json:"reordered"`
	Lock       string                `json:"lock"`
	Repin      bool                  `json:"repin"`
	Quarantine bool                  `json:"quarantine"`
	Written    bool                  `json:"written"`
}

// vetTools starts the hub with only server name (changed by edit, when
// not nil) and returns its tools, pinned.
func (f *hubFlags) vetTools(ctx context.Context, env *Env, cfg *config.Config, path, name string, edit func(*config.Server)) ([]junction.ManifestTool, error) {
	c := *cfg
	if edit != nil {
		c.Servers = make(map[string]*config.Server, len(cfg.Servers))
		for n, s := range cfg.Servers {
			c.Servers[n] = s
		}
		s := *cfg.Servers[name]
		edit(&s)
		c.Servers[name] = &s
	}
	quiet := *env
	quiet.Getenv = func(k string) string {
		if k == EnvTools {
			return ""
		}
		return env.Getenv(k)
	}
	vf := *f
	d, err := vf.buildFrom(ctx, &quiet, &c, path)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var pins []junction.ManifestTool
	for _, t := range d.View.Tools() {
		if t.Source == name {
			pins = append(pins, junction.PinTool(t.Tool, name))
		}
	}
	return pins, nil
}

// move is how an entry's pin moves: old becomes new in its args (a
// package) or its url (a remote).
type move struct {
	inArgs   bool
	old, new string
	what     string // what then runs, for people
}

func (m move) apply(s *config.Server) {
	if !m.inArgs {
		s.URL = m.new
		return
	}
	s.Args = slices.Clone(s.Args)
	for i, a := range s.Args {
		if a == m.old {
			s.Args[i] = m.new
		}
	}
}

// pinMove works out how the entry s moves to the server.json next: the
// package of the kind the entry runs (npx: npm, uvx: pypi, docker: oci)
// with its identifier, or the remote of its transport.
func pinMove(s *config.Server, next *registry.ServerJSON) (move, error) {
	if s.Transport != config.TransportStdio {
		want := registry.TransportStreamableHTTP
		if s.Transport == config.TransportSSE {
			want = registry.TransportSSE
		}
		for _, r := range next.Remotes {
			if r.Type != want {
				continue
			}
			if strings.Contains(r.URL, "{") {
				return move{}, fmt.Errorf("its %s remote's URL %s has {variables}, which update does not fill; add it again with \"junction add\"", r.Type, r.URL)
			}
			for _, h := range r.Headers {
				if h.IsRequired && h.Default == "" && !hasKeyFold(s.Headers, h.Name) {
					return move{}, fmt.Errorf("it needs the header %s (%s), which the entry does not set; add it to the entry's headers (a secret as ${VAR}), then update again", h.Name, cmpOr(clean(h.Description), "no description"))
				}
			}
			return move{old: s.URL, new: r.URL, what: "remote " + r.Type + " " + r.URL}, nil
		}
		return move{}, fmt.Errorf("it has no %s remote, which is what the entry runs (it has: %s)", want, strings.Join(append(next.PackageTypes(), remoteKinds(next)...), ", "))
	}
	kind := map[string]string{"npx": registry.TypeNPM, "uvx": registry.TypePyPI, "docker": registry.TypeOCI}[path.Base(filepath.ToSlash(s.Command))]
	if kind == "" {
		return move{}, fmt.Errorf("the entry runs %q, not npx, uvx or docker as junction add writes them, so update cannot tell which argument pins it", s.Command)
	}
	var tried []string
	for i := range next.Packages {
		p := &next.Packages[i]
		if !strings.EqualFold(p.RegistryType, kind) {
			continue
		}
		tried = append(tried, p.Identifier)
		e, err := registry.BuildEntry(&registry.ServerJSON{Schema: next.Schema, Name: next.Name, Version: next.Version, Packages: []registry.Package{pinOnly(p)}},
			registry.InstallOptions{Package: kind, AllowOCI: true, LookPath: func(string) bool { return true }})
		if err != nil {
			return move{}, err
		}
		newArg := e.Args[len(e.Args)-1] // npx -y PKG@V, uvx PKG==V, docker run -i --rm IMAGE
		prefix := pinPrefix(kind, p.Identifier, newArg)
		for _, a := range s.Args {
			if strings.HasPrefix(a, prefix) {
				for _, v := range p.EnvironmentVariables {
					if v.IsRequired && v.Default == "" && s.Env[v.Name] == "" {
						return move{}, fmt.Errorf("it needs the environment variable %s (%s), which the entry does not set; add it to the entry's env (a secret as ${VAR}), then update again", v.Name, cmpOr(clean(v.Description), "no description"))
					}
				}
				return move{inArgs: true, old: a, new: newArg, what: s.Command + " … " + newArg}, nil
			}
		}
	}
	if len(tried) == 0 {
		return move{}, fmt.Errorf("it has no %s package, which is what the entry runs (it has: %s)", kind, strings.Join(append(next.PackageTypes(), remoteKinds(next)...), ", "))
	}
	return move{}, fmt.Errorf("the entry's args pin none of its %s packages (%s): the package changed, or the entry was edited by hand; add it again with \"junction add\"", kind, strings.Join(tried, ", "))
}

// pinOnly is p without its inputs: BuildEntry then gives just the
// pinned argument, with nothing to fill.
func pinOnly(p *registry.Package) registry.Package {
	q := *p
	q.RuntimeArguments, q.PackageArguments, q.EnvironmentVariables = nil, nil, nil
	return q
}

// pinPrefix is what the entry's pinning argument starts with, whatever
// its version: "PKG@", "PKG==", or the image without its tag or digest.
func pinPrefix(kind, identifier, arg string) string {
	switch kind {
	case registry.TypeNPM:
		return identifier + "@"
	case registry.TypePyPI:
		return identifier + "=="
	}
	image := arg
	if i := strings.Index(image, "@sha256:"); i >= 0 {
		return image[:i+1]
	}
	if i := strings.LastIndexByte(image, ':'); i > strings.LastIndexByte(image, '/') {
		return image[:i+1]
	}
	return image
}

func remoteKinds(s *registry.ServerJSON) []string {
	var out []string
	for _, r := range s.Remotes {
		out = append(out, "remote "+r.Type)
	}
	return out
}

func hasKeyFold(m map[string]string, k string) bool {
	for key := range m {
		if strings.EqualFold(key, k) {
			return true
		}
	}
	return false
}

// registryVersion matches a version member, JSON or YAML; compiled on
// first use (package init stays small: cmd/junction's TestInitBudget).
var registryVersion = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:"version"|'version'|\bversion)[ \t]*:[ \t]*`)
})

// movedConfig returns the config file's bytes with the server's pin
// moved and its registry.version set to version: the old pin's text
// replaced where it stands in the file, and the version member's value,
// each edit checked by loading the result (editChecker). Every other
// byte is kept.
func movedConfig(path string, data []byte, name string, m move, version string) ([]byte, error) {
	ec, err := newEditChecker(path)
	if err != nil {
		return nil, err
	}
	defer ec.close()
	want, err := ec.load(data)
	if err != nil {
		return nil, fmt.Errorf("junction config %s: %w", path, err)
	}
	s := *want.Servers[name]
	m.apply(&s)
	ref := *s.Registry
	oldVersion := ref.Version
	ref.Version = version
	s.Registry = &ref
	want.Servers[name] = &s

	fail := fmt.Errorf("junction config %s: could not find the pin %s and registry.version %s of server %q to change; change them yourself (junction config check checks the file), or run update again", path, m.old, oldVersion, name)
	for _, at := range allIndex(data, []byte(m.old)) {
		pinned := slices.Concat(data[:at], []byte(m.new), data[at+len(m.old):])
		for _, loc := range registryVersion().FindAllIndex(pinned, -1) {
			v := loc[1]
			q := 0
			if v < len(pinned) && (pinned[v] == '"' || pinned[v] == '\'') {
				q = 1
			}
			if !bytes.HasPrefix(pinned[v+q:], []byte(oldVersion)) {
				continue
			}
			b := slices.Concat(pinned[:v+q], []byte(version), pinned[v+q+len(oldVersion):])
			if ec.same(want, b) {
				return b, nil
			}
		}
	}
	return nil, fail
}

func allIndex(data, sub []byte) []int {
	var out []int
	for i := 0; len(sub) > 0; {
		j := bytes.Index(data[i:], sub)
		if j < 0 {
			break
		}
		out = append(out, i+j)
		i += j + 1
	}
	return out
}

// writeUpdate writes the lock file's new pins for the server (when repin)
// in the place of its old ones, then the config file, if it is still as
// update read it. Both writes are atomic.
func writeUpdate(path string, before, after []byte, lockPath string, lock *junction.Manifest, name string, pins []junction.ManifestTool, repin bool) error {
	cur, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("junction config %s: %w", path, err)
	}
	if !bytes.Equal(cur, before) {
		return fmt.Errorf("junction config %s changed while update was running; nothing was written; run again", path)
	}
	if repin {
		at := slices.IndexFunc(lock.Tools, func(t junction.ManifestTool) bool { return t.Source == name })
		rest := slices.DeleteFunc(slices.Clone(lock.Tools), func(t junction.ManifestTool) bool { return t.Source == name })
		n := 0 // the other sources' pins before the server's
		for _, t := range lock.Tools[:at] {
			if t.Source != name {
				n++
			}
		}
		m := *lock
		m.Tools = slices.Insert(rest, n, pins...)
		if err := config.WriteLockFile(lockPath, &m); err != nil {
			return fmt.Errorf("lock file %s: %w; nothing was written", lockPath, err)
		}
	}
	mode := fs.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := atomicfile.Write(path, after, mode); err != nil {
		if repin {
			return fmt.Errorf("junction config %s: %w (the file is unchanged; the lock file %s already has the new version's pins: run update again)", path, err, lockPath)
		}
		return fmt.Errorf("junction config %s: %w", path, err)
	}
	return nil
}
