package config

import (
	"crypto/sha256"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MaxFileSize is the largest config file Parse reads.
const MaxFileSize = 4 << 20

// Parse reads a config from r. format is "yaml", "json" or "" to guess
// from the first non-blank byte ('{' means JSON). getenv resolves ${VAR}
// references; nil means no variable is set. Parse touches nothing else: no
// files, no logging, no globals.
//
// The error, if any, is an [Errors] listing every problem found.
func Parse(r io.Reader, format string, getenv func(string) string) (*Config, error) {
	return parse(r, format, &expander{getenv: getenv})
}

// Load reads the config file at path: YAML for .yaml and .yml, JSON for
// .json, otherwise guessed as Parse does. Relative paths inside the file
// (lock.path, http.token_file, a server's cwd and env_file) are made
// relative to the file's directory, and ${workspaceFolder} names that
// directory (its parent for .vscode/mcp.json and .cursor/mcp.json).
func Load(path string, getenv func(string) string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	x := &expander{getenv: getenv, workspace: workspaceFor(path), claudeCode: filepath.Base(path) == ".claude.json"}
	x.project, _ = os.Getwd()
	c, err := parse(f, formatFor(path), x)
	if es, ok := err.(Errors); ok {
		for _, e := range es {
			e.File = path
		}
		return nil, es
	}
	if err != nil {
		return nil, err
	}
	c.resolvePaths(filepath.Dir(path))
	return c, nil
}

func formatFor(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return "yaml"
	case ".json":
		return "json"
	}
	return ""
}

func (c *Config) resolvePaths(dir string) {
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		if d, err := filepath.Abs(dir); err == nil {
			return filepath.Join(d, p)
		}
		return filepath.Join(dir, p)
	}
	c.Lock.Path = abs(c.Lock.Path)
	c.HTTP.TokenFile = abs(c.HTTP.TokenFile)
	if c.Audit.Output != "stderr" && c.Audit.Output != "-" {
		c.Audit.Output = abs(c.Audit.Output)
	}
	for _, s := range c.Servers {
		s.Cwd = abs(s.Cwd)
		s.EnvFile = abs(s.EnvFile)
		s.OAuthClientKeyFile = abs(s.OAuthClientKeyFile)
		s.OAuthAssertionFile = abs(s.OAuthAssertionFile)
		s.OAuthIDTokenFile = abs(s.OAuthIDTokenFile)
	}
	for _, p := range c.Plugins {
		p.Cwd = abs(p.Cwd)
	}
}

func parse(r io.Reader, format string, x *expander) (*Config, error) {
	if x.getenv == nil {
		x.getenv = func(string) string { return "" }
	}
	limit := int64(MaxFileSize)
	if x.claudeCode {
		limit = MaxClaudeCodeFileSize
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if int64(len(data)) > limit {
		return nil, Errors{{Msg: fmt.Sprintf("file larger than %d bytes", limit)}}
	}
	switch f := strings.ToLower(format); f {
	case "":
		format = sniff(data)
	case "yaml", "yml":
		format = "yaml"
	case "json":
		format = "json"
	default:
		return nil, fmt.Errorf("config: unknown format %q (use yaml or json)", format)
	}
	var root *node
	if format == "json" {
		root, err = parseJSON(data)
	} else {
		root, err = parseYAML(data)
	}
	if err != nil {
		return nil, Errors{err.(*FieldError)}
	}
	d := &decoder{x: x, lines: make(map[string]int), bad: make(map[string]bool), json: format == "json"}
	c := d.config(root)
	c.digest = sha256.Sum256(data)
	errs := append(d.errs, c.validate(d.bad)...)
	c.Warnings = append(c.Warnings, d.warns...)
	sortWarnings(c.Warnings)
	if err := errs.err(); err != nil {
		return nil, err
	}
	return c, nil
}

// decoder turns a node tree into a Config, strictly: every key must be
// known, every value of the right type. It collects all problems.
type decoder struct {
	x     *expander
	json  bool // the file is JSON (VS Code's shape is JSON only)
	errs  Errors
	warns []Warning
	lines map[string]int
	// bad holds the paths that had decode errors, so validation does not
	// report them a second time.
	bad map[string]bool
}

func (d *decoder) fail(line int, path, format string, args ...any) {
	d.errs = append(d.errs, &FieldError{Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
	// Validation adds nothing more about this path.
	d.bad[path] = true
}

func (d *decoder) warn(line int, path, msg string) {
	d.warns = append(d.warns, Warning{Line: line, Path: path, Msg: msg})
}

var plainKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]+$`) })

// join appends a mapping key to a path: servers.github, or servers["my server"]
// when the key is not a plain word.
func join(path, key string) string {
	if !plainKey().MatchString(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// mapping returns the entries of n, recording their lines. Null is an
// empty mapping; anything else that is not a mapping is an error.
func (d *decoder) mapping(n *node, path string) []entry {
	switch n.kind {
	case nullNode:
		return nil
	case mapNode:
		for _, e := range n.entries {
			d.lines[join(path, e.key)] = e.line
		}
		return n.entries
	}
	d.fail(n.line, path, "expected a mapping, got %s", n.describe())
	return nil
}

func (d *decoder) unknown(e entry, path string, known []string) {
	d.fail(e.line, join(path, e.key), "unknown key%s", suggest(e.key, known))
}

// str reads a scalar as text. YAML numbers and booleans are accepted as
// their text (args: [--port, 8080]); mappings, lists and null are not.
func (d *decoder) str(n *node, path string) string {
	if n.kind != scalarNode {
		d.fail(n.line, path, "expected a string, got %s", n.describe())
		return ""
	}
	return n.value
}

// strX reads a string and expands its ${...} references.
func (d *decoder) strX(n *node, path string) string {
	s := d.str(n, path)
	v, err := d.x.expand(s)
	if err != nil {
		d.fail(n.line, path, "%v", err)
		return ""
	}
	return v
}

func (d *decoder) boolean(n *node, path string) bool {
	if n.kind != scalarNode || n.tag != "bool" {
		d.fail(n.line, path, "expected true or false, got %s", n.describe())
		return false
	}
	return n.value == "true"
}

// duration reads a Go duration string ("30s", "1m30s") or a number of
// seconds (hosts write timeouts as seconds).
func (d *decoder) duration(n *node, path string) time.Duration {
	if n.kind == scalarNode {
		switch n.tag {
		case "int", "float":
			f, err := strconv.ParseFloat(n.value, 64)
			if err != nil || math.IsNaN(f) || math.Abs(f) > float64(math.MaxInt64/int64(time.Second)) {
				d.fail(n.line, path, "invalid duration %s", n.value)
				return 0
			}
			return time.Duration(f * float64(time.Second))
		case "str":
			v, err := time.ParseDuration(strings.TrimSpace(n.value))
			if err != nil {
				d.fail(n.line, path, "invalid duration %q (use a number of seconds or a Go duration such as \"30s\" or \"2m\")", n.value)
				return 0
			}
			return v
		}
	}
	d.fail(n.line, path, "expected a duration, got %s", n.describe())
	return 0
}

// callTimeout is a duration, or "none" for no bound ([NoTimeout]).
func (d *decoder) callTimeout(n *node, path string) time.Duration {
	if n.kind == scalarNode && n.tag == "str" && strings.EqualFold(strings.TrimSpace(n.value), "none") {
		return NoTimeout
	}
	return d.duration(n, path)
}

// withdrawAfter is a duration, or "never" ([NoTimeout]).
func (d *decoder) withdrawAfter(n *node, path string) time.Duration {
	if n.kind == scalarNode && n.tag == "str" && strings.EqualFold(strings.TrimSpace(n.value), "never") {
		return NoTimeout
	}
	return d.duration(n, path)
}

func (d *decoder) integer(n *node, path string) int64 {
	if n.kind == scalarNode && n.tag == "int" {
		v, err := strconv.ParseInt(n.value, 0, 64)
		if err == nil {
			return v
		}
	}
	d.fail(n.line, path, "expected a whole number, got %s", n.describe())
	return 0
}

// float reads a number, whole or not.
func (d *decoder) float(n *node, path string) float64 {
	if n.kind == scalarNode && (n.tag == "int" || n.tag == "float") {
		v, err := strconv.ParseFloat(n.value, 64)
		if err == nil {
			return v
		}
	}
	d.fail(n.line, path, "expected a number, got %s", n.describe())
	return 0
}

// strList reads a list of strings, expanding them if expand is set. Null
// is an empty list.
func (d *decoder) strList(n *node, path string, expand bool) []string {
	switch n.kind {
	case nullNode:
		return nil
	case seqNode:
	default:
		d.fail(n.line, path, "expected a list of strings, got %s", n.describe())
		return nil
	}
	out := make([]string, 0, len(n.items))
	for i, it := range n.items {
		p := index(path, i)
		d.lines[p] = it.line
		if expand {
			out = append(out, d.strX(it, p))
		} else {
			out = append(out, d.str(it, p))
		}
	}
	return out
}

// strMap reads a mapping of strings.
func (d *decoder) strMap(n *node, path string, expand bool) map[string]string {
	entries := d.mapping(n, path)
	if entries == nil {
		return nil
	}
	out := make(map[string]string, len(entries))
	for _, e := range entries {
		p := join(path, e.key)
		if expand {
			out[e.key] = d.strX(e.val, p)
		} else {
			out[e.key] = d.str(e.val, p)
		}
	}
	return out
}

// --- top level ---

var topKeys = []string{"servers", "mcpServers", "packs", "plugins", "presets", "profiles", "discovery", "http", "lock", "log", "audit", "startup_budget", "store", "sandbox", "code_mode", "registries", "inputs"}

// hostTopKeys are top-level keys that hosts write beside their servers and
// junction ignores.
var hostTopKeys = map[string]string{
	"globalShortcut":           "a Claude Desktop setting",
	"preferences":              "a Claude Desktop setting",
	"isUsingBuiltInNodeForMcp": "a Claude Desktop setting",
	"isDxtAutoUpdatesEnabled":  "a Claude Desktop setting",
}

func (d *decoder) config(root *node) *Config {
	c := &Config{
		HTTP: HTTP{Mode: "dual"},
		Log:  Log{Level: "info", Format: "text"},
	}
	c.lines = d.lines
	if d.isClaudeCode(root) {
		return d.claudeCode(root)
	}
	if root.kind != mapNode && root.kind != nullNode {
		d.fail(root.line, "", "the top level must be a mapping of sections (servers, packs, ...), got %s", root.describe())
		return c
	}
	shape := map[string]bool{}
	var vscodeOnly = true
	for _, e := range d.mapping(root, "") {
		shape[e.key] = true
		switch e.key {
		case "servers", "mcpServers":
			if !d.servers(c, e.val, e.key) {
				vscodeOnly = false
			}
		case "packs":
			c.Packs = d.packs(e.val, "packs")
		case "plugins":
			c.Plugins = d.plugins(e.val, "plugins")
		case "presets":
			c.Presets = d.presets(e.val, "presets")
		case "profiles":
			c.Profiles = d.profiles(e.val, "profiles")
		case "discovery":
			d.discovery(&c.Discovery, e.val, "discovery")
		case "code_mode":
			c.CodeMode = d.codeMode(e.val, "code_mode", true)
		case "http":
			d.http(&c.HTTP, e.val, "http")
		case "lock":
			d.lock(&c.Lock, e.val, "lock")
		case "log":
			d.log(&c.Log, e.val, "log")
		case "audit":
			d.audit(&c.Audit, e.val, "audit")
		case "startup_budget":
			if b := d.duration(e.val, "startup_budget"); b >= 0 {
				c.StartupBudget = &b
			} else {
				d.fail(e.val.line, "startup_budget", "must not be negative (0 means hosts do not wait)")
			}
		case "store":
			c.Store = d.strX(e.val, "store")
		case "sandbox":
			c.Sandbox = d.sandbox(e.val, "sandbox")
		case "registries":
			c.Registries = d.registries(e.val, "registries")
		case "inputs":
			d.inputs(e.val, "inputs")
		case "$schema":
		default:
			if why, ok := hostTopKeys[e.key]; ok {
				d.warn(e.line, e.key, "ignored ("+why+")")
				continue
			}
			d.unknown(e, "", topKeys)
		}
	}
	switch {
	case shape["mcpServers"] && len(shape) == 1+countHost(shape):
		c.Shape = ShapeMCPServers
	case d.json && shape["servers"] && vscodeOnly && !hasAny(shape, "mcpServers", "packs", "plugins", "presets", "profiles", "discovery", "http", "lock", "log", "audit", "startup_budget", "store"):
		c.Shape = ShapeVSCode
	default:
		c.Shape = ShapeJunction
	}
	return c
}

func countHost(shape map[string]bool) int {
	n := 0
	for k := range shape {
		if _, ok := hostTopKeys[k]; ok || k == "$schema" {
			n++
		}
	}
	return n
}

func hasAny(set map[string]bool, keys ...string) bool {
	for _, k := range keys {
		if set[k] {
			return true
		}
	}
	return false
}

// registries reads the top-level list of registry URLs.
func (d *decoder) registries(n *node, path string) []string {
	urls := d.strList(n, path, true)
	for i, u := range urls {
		if err := checkRegistryURL(u); err != nil {
			d.fail(n.line, index(path, i), "%v", err)
		}
	}
	return urls
}

// checkRegistryURL checks a registry's base URL: absolute, http or https,
// no query or fragment.
func checkRegistryURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a URL: %v", raw, err)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return fmt.Errorf("%q: want the registry's http:// or https:// base URL, such as https://registry.modelcontextprotocol.io", raw)
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("%q: a registry's base URL has no query or fragment", raw)
	}
	return nil
}

var registryRefKeys = []string{"name", "version", "url"}

// registryRef reads a server's registry: {name, version, url}.
func (d *decoder) registryRef(n *node, path string) *RegistryRef {
	if n.kind != mapNode {
		d.fail(n.line, path, "expected a mapping {name, version, url}, got %s", n.describe())
		return nil
	}
	r := &RegistryRef{}
	for _, e := range d.mapping(n, path) {
		p := join(path, e.key)
		switch e.key {
		case "name":
			r.Name = d.str(e.val, p)
		case "version":
			r.Version = d.str(e.val, p)
		case "url":
			r.URL = d.str(e.val, p)
			if r.URL != "" {
				if err := checkRegistryURL(r.URL); err != nil {
					d.fail(e.line, p, "%v", err)
				}
			}
		default:
			d.unknown(e, path, registryRefKeys)
		}
	}
	if r.Name == "" || r.Version == "" {
		d.fail(n.line, path, "needs name and version (as junction add writes them), such as {\"name\": \"io.github.modelcontextprotocol/server-memory\", \"version\": \"2026.1.26\"}")
	}
	return r
}

// inputs accepts VS Code's "inputs" list; junction cannot prompt, so a
// non-empty list is a warning and each ${input:...} an error.
func (d *decoder) inputs(n *node, path string) {
	switch n.kind {
	case nullNode:
	case seqNode:
		if len(n.items) > 0 {
			d.warn(n.line, path, "ignored (VS Code input prompts; junction reads environment variables instead)")
		}
	default:
		d.fail(n.line, path, "expected a list, got %s", n.describe())
	}
}

// --- servers ---

var serverKeys = []string{"transport", "command", "args", "env", "cwd", "env_file", "url", "headers", "bearer_token",
	"auth", "oauth_client_id", "oauth_client_secret", "oauth_client_metadata_url", "oauth_client_key_file", "oauth_assertion_file",
	"oauth_idp_issuer", "oauth_idp_client_id", "oauth_idp_client_secret", "oauth_id_token_file", "oauth_token_exchange",
	"connect_timeout", "keep_alive", "stop_timeout", "protocol_version", "withdraw_after",
	"sessions", "max_host_sessions", "credentials", "sandbox", "quarantine", "registry",
	"prefix", "tools", "timeout", "tool_timeouts", "drift", "disabled"}

// serverAliases are the spellings hosts use for junction's keys.
var serverAliases = map[string]string{
	"type":            "transport", // VS Code, Claude Code, Cursor
	"transportType":   "transport", // Cline
	"envFile":         "env_file",  // VS Code, Cursor
	"serverUrl":       "url",       // Windsurf
	"timeout_seconds": "timeout",   // deepseekcode
	"disabledTools":   "deny",      // Windsurf, Roo Code
	"disabled_tools":  "deny",      // deepseekcode
	"enabled_tools":   "allow",     // deepseekcode
}

// hostServerKeys are per-server keys that hosts define and junction does
// not act on; they are accepted with a warning.
var hostServerKeys = map[string]string{
	"dev":           "VS Code development mode",
	"gallery":       "VS Code gallery metadata",
	"version":       "VS Code gallery metadata",
	"oauth":         "Claude Code OAuth settings; use auth: oauth with oauth_client_id",
	"headersHelper": "Claude Code header script; use headers with ${VAR} instead",
	"auth":          "Cursor OAuth settings; use auth: oauth with oauth_client_id and oauth_client_secret",
	"autoApprove":   "Cline/Roo Code approval list",
	"alwaysAllow":   "Cline/Roo Code approval list",
}

// vscodeServerKeys are the keys VS Code's mcp.json schema allows.
var vscodeServerKeys = map[string]bool{"type": true, "command": true, "args": true, "env": true, "envFile": true,
	"cwd": true, "url": true, "headers": true, "dev": true, "gallery": true, "version": true}

// servers decodes a servers or mcpServers section into c.Servers. It
// reports whether every entry used only VS Code's keys.
func (d *decoder) servers(c *Config, n *node, section string) bool {
	vscodeOnly := true
	if c.Servers == nil {
		c.Servers = make(map[string]*Server)
	}
	for _, e := range d.mapping(n, section) {
		path := join(section, e.key)
		if _, dup := c.Servers[e.key]; dup {
			d.fail(e.line, path, "server %q is defined in both servers and mcpServers", e.key)
			continue
		}
		s, only := d.server(e.val, path)
		vscodeOnly = vscodeOnly && only
		c.Servers[e.key] = s
		if c.serverPaths == nil {
			c.serverPaths = make(map[string]string)
		}
		c.serverPaths[e.key] = path
	}
	return vscodeOnly
}

func (d *decoder) server(n *node, path string) (*Server, bool) {
	s := &Server{Source: defaultSource(PrefixAlways)}
	vscodeOnly := true
	seen := map[string]string{} // canonical key → spelling used
	for _, e := range d.mapping(n, path) {
		if !vscodeServerKeys[e.key] {
			vscodeOnly = false
		}
		key := e.key
		if canon, ok := serverAliases[key]; ok {
			key = canon
		}
		p := join(path, e.key)
		if prev, ok := seen[key]; ok {
			d.fail(e.line, p, "%s and %s say the same thing; keep one", prev, e.key)
			continue
		}
		seen[key] = e.key
		switch key {
		case "transport":
			s.Transport = d.transport(e.val, p)
		case "command":
			s.Command = d.strX(e.val, p)
		case "args":
			s.Args = d.strList(e.val, p, true)
		case "env":
			s.Env, s.UnsetEnv = d.env(e.val, p)
		case "cwd":
			s.Cwd = d.strX(e.val, p)
		case "sandbox":
			s.Sandbox = d.sandbox(e.val, p)
		case "env_file":
			s.EnvFile = d.strX(e.val, p)
		case "url":
			s.URL = d.strX(e.val, p)
		case "headers":
			s.Headers = d.strMap(e.val, p, true)
		case "bearer_token":
			s.BearerToken = d.strX(e.val, p)
		case "auth":
			if e.val.kind == mapNode {
				d.warn(e.line, p, "ignored ("+hostServerKeys["auth"]+")")
				continue
			}
			s.Auth = strings.ToLower(d.str(e.val, p))
		case "oauth_client_id":
			s.OAuthClientID = d.strX(e.val, p)
		case "oauth_client_secret":
			s.OAuthClientSecret = d.strX(e.val, p)
		case "oauth_client_metadata_url":
			s.OAuthClientMetadataURL = d.strX(e.val, p)
		case "oauth_client_key_file":
			s.OAuthClientKeyFile = d.strX(e.val, p)
		case "oauth_assertion_file":
			s.OAuthAssertionFile = d.strX(e.val, p)
		case "oauth_idp_issuer":
			s.OAuthIdPIssuer = d.strX(e.val, p)
		case "oauth_idp_client_id":
			s.OAuthIdPClientID = d.strX(e.val, p)
		case "oauth_idp_client_secret":
			s.OAuthIdPClientSecret = d.strX(e.val, p)
		case "oauth_id_token_file":
			s.OAuthIDTokenFile = d.strX(e.val, p)
		case "oauth_token_exchange":
			s.OAuthTokenExchange = d.boolean(e.val, p)
		case "connect_timeout":
			s.ConnectTimeout = d.duration(e.val, p)
		case "keep_alive":
			s.KeepAlive = d.duration(e.val, p)
		case "stop_timeout":
			s.StopTimeout = d.duration(e.val, p)
		case "protocol_version":
			s.ProtocolVersion = d.str(e.val, p)
		case "withdraw_after":
			s.WithdrawAfter = d.withdrawAfter(e.val, p)
		case "sessions":
			s.Sessions = strings.ToLower(d.str(e.val, p))
		case "max_host_sessions":
			s.MaxHostSessions = int(d.integer(e.val, p))
		case "credentials":
			s.Credentials = strings.ToLower(d.str(e.val, p))
		case "quarantine":
			s.Quarantine = d.boolean(e.val, p)
		case "registry":
			s.Registry = d.registryRef(e.val, p)
		case "allow", "deny":
			if seen["tools"] != "" {
				d.fail(e.line, p, "set tools.%s instead, not both %s and tools", key, e.key)
				continue
			}
			if key == "allow" {
				s.Tools.Allow = d.strList(e.val, p, false)
			} else {
				s.Tools.Deny = d.strList(e.val, p, false)
			}
		default:
			if key == "tools" && (seen["allow"] != "" || seen["deny"] != "") {
				d.fail(e.line, p, "set tools or %s%s, not both", seen["allow"], seen["deny"])
				continue
			}
			if d.sourceKey(&s.Source, key, e, p) {
				continue
			}
			if why, ok := hostServerKeys[e.key]; ok {
				d.warn(e.line, p, "ignored ("+why+")")
				continue
			}
			d.unknown(e, path, append(serverKeys, "type"))
		}
	}
	if s.Transport == "" && seen["transport"] == "" {
		// Infer from the keys present, even if their values were bad, so
		// that a bad command is reported once, as itself.
		hasCmd, hasURL := seen["command"] != "", seen["url"] != ""
		switch {
		case hasCmd && !hasURL:
			s.Transport = TransportStdio
		case hasURL && !hasCmd:
			s.Transport = TransportHTTP
		}
	}
	return s, vscodeOnly
}

func defaultSource(prefix string) Source {
	return Source{Prefix: prefix, Drift: DriftWarn}
}

// sourceKey decodes the keys every source has; it reports whether key was
// one of them.
func (d *decoder) sourceKey(s *Source, key string, e entry, p string) bool {
	switch key {
	case "prefix":
		s.Prefix = strings.ToLower(d.str(e.val, p))
	case "tools":
		d.toolFilter(&s.Tools, e.val, p)
	case "timeout":
		s.Timeout = d.callTimeout(e.val, p)
	case "tool_timeouts":
		entries := d.mapping(e.val, p)
		if entries != nil {
			s.ToolTimeouts = make(map[string]time.Duration, len(entries))
		}
		for _, te := range entries {
			s.ToolTimeouts[te.key] = d.callTimeout(te.val, join(p, te.key))
		}
	case "drift":
		s.Drift = strings.ToLower(d.str(e.val, p))
	case "disabled":
		s.Disabled = d.boolean(e.val, p)
	default:
		return false
	}
	return true
}

func (d *decoder) toolFilter(f *ToolFilter, n *node, path string) {
	for _, e := range d.mapping(n, path) {
		p := join(path, e.key)
		switch e.key {
		case "allow":
			f.Allow = d.strList(e.val, p, false)
		case "deny":
			f.Deny = d.strList(e.val, p, false)
		default:
			d.unknown(e, path, []string{"allow", "deny"})
		}
	}
}

// transport reads a transport name, accepting the spellings hosts use.
func (d *decoder) transport(n *node, path string) string {
	v := d.str(n, path)
	switch strings.ToLower(v) {
	case "stdio", "local":
		return TransportStdio
	case "sse":
		return TransportSSE
	case "http", "streamable-http", "streamable_http", "streamablehttp", "streamable":
		return TransportHTTP
	case "":
		if n.kind == scalarNode {
			d.fail(n.line, path, "must not be empty (use stdio, sse or http)")
		}
		return ""
	}
	d.fail(n.line, path, "unknown transport %q (use stdio, sse or http)", v)
	return ""
}

// env reads an environment mapping. VS Code allows numbers (kept as text)
// and null, which removes the variable from the inherited environment.
func (d *decoder) env(n *node, path string) (map[string]string, []string) {
	entries := d.mapping(n, path)
	if entries == nil {
		return nil, nil
	}
	env := make(map[string]string, len(entries))
	var unset []string
	for _, e := range entries {
		p := join(path, e.key)
		if e.key == "" || strings.ContainsAny(e.key, "=\x00") {
			d.fail(e.line, p, "invalid environment variable name %q", e.key)
			continue
		}
		if e.val.kind == nullNode {
			unset = append(unset, e.key)
			continue
		}
		env[e.key] = d.strX(e.val, p)
	}
	sortStrings(unset)
	return env, unset
}

// --- plugins, packs ---

var pluginKeys = []string{"command", "args", "env", "cwd", "sandbox", "url", "headers", "bearer_token",
	"prefix", "tools", "timeout", "tool_timeouts", "drift", "disabled"}

func (d *decoder) plugins(n *node, path string) map[string]*Plugin {
	entries := d.mapping(n, path)
	out := make(map[string]*Plugin, len(entries))
	for _, e := range entries {
		pp := join(path, e.key)
		pl := &Plugin{Source: defaultSource(PrefixAlways)}
		for _, f := range d.mapping(e.val, pp) {
			p := join(pp, f.key)
			switch f.key {
			case "command":
				pl.Command = d.strX(f.val, p)
			case "args":
				pl.Args = d.strList(f.val, p, true)
			case "env":
				pl.Env = d.strMap(f.val, p, true)
			case "cwd":
				pl.Cwd = d.strX(f.val, p)
			case "sandbox":
				pl.Sandbox = d.sandbox(f.val, p)
			case "url":
				pl.URL = d.strX(f.val, p)
			case "headers":
				pl.Headers = d.strMap(f.val, p, true)
			case "bearer_token":
				pl.BearerToken = d.strX(f.val, p)
			default:
				if !d.sourceKey(&pl.Source, f.key, f, p) {
					d.unknown(f, pp, pluginKeys)
				}
			}
		}
		out[e.key] = pl
	}
	return out
}

var packKeys = []string{"settings", "prefix", "tools", "timeout", "tool_timeouts", "drift", "disabled"}

// packs reads either a list of names or a mapping of name → settings.
func (d *decoder) packs(n *node, path string) map[string]*Pack {
	out := make(map[string]*Pack)
	switch n.kind {
	case nullNode:
		return out
	case seqNode:
		for i, it := range n.items {
			p := index(path, i)
			d.lines[p] = it.line
			name := d.str(it, p)
			if _, dup := out[name]; dup {
				d.fail(it.line, p, "pack %q is listed twice", name)
				continue
			}
			out[name] = &Pack{Source: defaultSource(PrefixNever)}
		}
		return out
	}
	for _, e := range d.mapping(n, path) {
		pp := join(path, e.key)
		pk := &Pack{Source: defaultSource(PrefixNever)}
		for _, f := range d.mapping(e.val, pp) {
			p := join(pp, f.key)
			if f.key == "settings" {
				pk.Settings = d.settings(f.val, p)
				continue
			}
			if !d.sourceKey(&pk.Source, f.key, f, p) {
				d.unknown(f, pp, packKeys)
			}
		}
		out[e.key] = pk
	}
	return out
}

// settings reads a free-form mapping for a pack, expanding ${VAR} in its
// strings. Values are string, bool, int64, float64, []any or map[string]any.
func (d *decoder) settings(n *node, path string) map[string]any {
	entries := d.mapping(n, path)
	if entries == nil {
		return nil
	}
	out := make(map[string]any, len(entries))
	for _, e := range entries {
		out[e.key] = d.anyValue(e.val, join(path, e.key))
	}
	return out
}

func (d *decoder) anyValue(n *node, path string) any {
	switch n.kind {
	case nullNode:
		return nil
	case mapNode:
		return d.settings(n, path)
	case seqNode:
		out := make([]any, len(n.items))
		for i, it := range n.items {
			out[i] = d.anyValue(it, index(path, i))
		}
		return out
	}
	switch n.tag {
	case "bool":
		return n.value == "true"
	case "int":
		if v, err := strconv.ParseInt(n.value, 0, 64); err == nil {
			return v
		}
		fallthrough
	case "float":
		if v, err := strconv.ParseFloat(n.value, 64); err == nil {
			return v
		}
		return n.value
	}
	return d.strX(n, path)
}

// --- presets, profiles ---

func (d *decoder) presets(n *node, path string) map[string][]string {
	entries := d.mapping(n, path)
	out := make(map[string][]string, len(entries))
	for _, e := range entries {
		out[e.key] = d.strList(e.val, join(path, e.key), false)
	}
	return out
}

var profileKeys = []string{"servers", "tools", "presets", "deny", "discovery", "code_mode"}

func (d *decoder) profiles(n *node, path string) map[string]*Profile {
	entries := d.mapping(n, path)
	out := make(map[string]*Profile, len(entries))
	for _, e := range entries {
		pp := join(path, e.key)
		pr := &Profile{}
		for _, f := range d.mapping(e.val, pp) {
			p := join(pp, f.key)
			switch f.key {
			case "servers":
				pr.Servers = d.strList(f.val, p, false)
			case "tools":
				pr.Tools = d.strList(f.val, p, false)
			case "presets":
				pr.Presets = d.strList(f.val, p, false)
			case "deny":
				pr.Deny = d.strList(f.val, p, false)
			case "discovery":
				d.discovery(&pr.Discovery, f.val, p)
			case "code_mode":
				pr.CodeMode = d.codeMode(f.val, p, false)
			default:
				d.unknown(f, pp, profileKeys)
			}
		}
		out[e.key] = pr
	}
	return out
}

var discoveryKeys = []string{"mode", "pinned", "names", "semantic"}

var semanticKeys = []string{"url", "model", "api_key", "dimensions", "timeout", "weight"}

func (d *decoder) discovery(ds *Discovery, n *node, path string) {
	for _, e := range d.mapping(n, path) {
		p := join(path, e.key)
		switch e.key {
		case "mode":
			ds.Mode = strings.ToLower(strings.TrimSpace(d.str(e.val, p)))
		case "pinned":
			ds.Pinned = d.strList(e.val, p, false)
		case "names":
			for _, f := range d.mapping(e.val, p) {
				q := join(p, f.key)
				switch f.key {
				case "search":
					ds.Names.Search = d.str(f.val, q)
				case "describe":
					ds.Names.Describe = d.str(f.val, q)
				case "call":
					ds.Names.Call = d.str(f.val, q)
				default:
					d.unknown(f, p, []string{"search", "describe", "call"})
				}
			}
		case "semantic":
			ds.Semantic = &Semantic{}
			for _, f := range d.mapping(e.val, p) {
				q := join(p, f.key)
				switch f.key {
				case "url":
					ds.Semantic.URL = d.strX(f.val, q)
				case "model":
					ds.Semantic.Model = d.strX(f.val, q)
				case "api_key":
					ds.Semantic.APIKey = d.strX(f.val, q)
				case "dimensions":
					ds.Semantic.Dimensions = int(d.integer(f.val, q))
				case "timeout":
					ds.Semantic.Timeout = d.duration(f.val, q)
				case "weight":
					ds.Semantic.Weight = d.float(f.val, q)
				default:
					d.unknown(f, p, semanticKeys)
				}
			}
		default:
			d.unknown(e, path, discoveryKeys)
		}
	}
}

var codeModeKeys = []string{"enabled", "name", "limits"}

var codeLimitKeys = []string{"wall", "cpu", "memory", "calls", "concurrent", "output"}

// codeMode reads code_mode: on or off (YAML's true and false too), or a
// mapping; limits only where top is set (they are the hub's).
func (d *decoder) codeMode(n *node, path string, top bool) CodeMode {
	var cm CodeMode
	onOff := func(n *node, path string) bool {
		if n.kind == scalarNode && n.tag == "bool" {
			return d.boolean(n, path)
		}
		switch v := strings.ToLower(strings.TrimSpace(d.str(n, path))); v {
		case "on":
			return true
		case "off", "":
			return false
		default:
			d.fail(n.line, path, "want on or off, got %q", v)
			return false
		}
	}
	if n.kind == scalarNode {
		cm.Enabled = onOff(n, path)
		return cm
	}
	keys := codeModeKeys
	if !top {
		keys = codeModeKeys[:2]
	}
	for _, e := range d.mapping(n, path) {
		p := join(path, e.key)
		switch {
		case e.key == "enabled":
			cm.Enabled = onOff(e.val, p)
		case e.key == "name":
			cm.Name = d.str(e.val, p)
		case e.key == "limits" && top:
			for _, f := range d.mapping(e.val, p) {
				q := join(p, f.key)
				l := &cm.Limits
				switch f.key {
				case "wall":
					l.Wall = d.duration(f.val, q)
				case "cpu":
					l.CPU = d.duration(f.val, q)
				case "memory":
					l.Memory = d.bytes(f.val, q)
				case "calls":
					l.Calls = int(d.integer(f.val, q))
				case "concurrent":
					l.Concurrent = int(d.integer(f.val, q))
				case "output":
					l.Output = d.bytes(f.val, q)
				default:
					d.unknown(f, p, codeLimitKeys)
				}
			}
		case e.key == "limits":
			d.fail(e.line, p, "script limits are the hub's: set them under the top-level code_mode")
		default:
			d.unknown(e, path, keys)
		}
	}
	return cm
}

var sandboxKeys = []string{"level", "read_only", "read_write", "network", "env", "limits"}

var sandboxLimitKeys = []string{"memory", "cpu", "procs", "files"}

// sandbox reads a sandbox: a level alone (off, on, strict; YAML's
// true and false read as on and off) or a mapping.
func (d *decoder) sandbox(n *node, path string) *Sandbox {
	sb := &Sandbox{}
	switch {
	case n.kind == scalarNode && n.tag == "bool":
		sb.Level = SandboxOff
		if d.boolean(n, path) {
			sb.Level = SandboxOn
		}
		return sb
	case n.kind == scalarNode:
		sb.Level = strings.ToLower(strings.TrimSpace(d.str(n, path)))
		return sb
	}
	for _, e := range d.mapping(n, path) {
		p := join(path, e.key)
		switch e.key {
		case "level":
			if e.val.kind == scalarNode && e.val.tag == "bool" {
				sb.Level = d.sandbox(e.val, p).Level
			} else {
				sb.Level = strings.ToLower(strings.TrimSpace(d.str(e.val, p)))
			}
		case "read_only":
			sb.ReadOnly = d.strList(e.val, p, true)
		case "read_write":
			sb.ReadWrite = d.strList(e.val, p, true)
		case "network":
			sb.Network = d.strList(e.val, p, false)
		case "env":
			sb.Env = d.strList(e.val, p, false)
		case "limits":
			for _, f := range d.mapping(e.val, p) {
				q := join(p, f.key)
				switch f.key {
				case "memory":
					sb.Memory = d.bytes(f.val, q)
				case "cpu":
					sb.CPU = d.duration(f.val, q)
				case "procs":
					sb.Procs = int(d.integer(f.val, q))
				case "files":
					sb.Files = int(d.integer(f.val, q))
				default:
					d.unknown(f, p, sandboxLimitKeys)
				}
			}
		default:
			d.unknown(e, path, sandboxKeys)
		}
	}
	return sb
}

// bytes reads a size: a whole number of bytes, or one with a unit (KiB,
// MiB, GiB, or KB, MB, GB as powers of 1000).
func (d *decoder) bytes(n *node, path string) int64 {
	if n.kind == scalarNode && n.tag == "int" {
		return d.integer(n, path)
	}
	s := strings.TrimSpace(d.str(n, path))
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
			if err == nil && v >= 0 && v <= (1<<62)/u.mult {
				return v * u.mult
			}
			break
		}
	}
	d.fail(n.line, path, "expected a size such as 512MiB or 2GiB, got %q", s)
	return 0
}

// --- http, lock, log ---

var httpKeys = []string{"listen", "mode", "json_response", "session_timeout", "session_park", "max_request_bytes", "tokens",
	"token_file", "allowed_hosts", "allowed_origins", "public_url", "insecure_no_auth", "admin", "auth"}

func (d *decoder) http(h *HTTP, n *node, path string) {
	for _, e := range d.mapping(n, path) {
		p := join(path, e.key)
		switch e.key {
		case "listen":
			h.Listen = d.str(e.val, p)
		case "mode":
			h.Mode = strings.ToLower(d.str(e.val, p))
		case "json_response":
			h.JSONResponse = d.boolean(e.val, p)
		case "session_timeout":
			h.SessionTimeout = d.duration(e.val, p)
		case "session_park":
			h.SessionPark = d.duration(e.val, p)
		case "max_request_bytes":
			h.MaxRequestBytes = d.integer(e.val, p)
		case "tokens":
			h.Tokens = d.strList(e.val, p, true)
		case "token_file":
			h.TokenFile = d.strX(e.val, p)
		case "allowed_hosts":
			h.AllowedHosts = d.strList(e.val, p, false)
		case "allowed_origins":
			h.AllowedOrigins = d.strList(e.val, p, false)
		case "public_url":
			h.PublicURL = d.strX(e.val, p)
		case "insecure_no_auth":
			h.InsecureNoAuth = d.boolean(e.val, p)
		case "admin":
			h.Admin = d.str(e.val, p)
		case "auth":
			d.httpAuth(&h.Auth, e.val, p)
		default:
			d.unknown(e, path, httpKeys)
		}
	}
}

var httpAuthKeys = []string{"mode", "issuer", "audience", "jwks_url", "algorithms", "introspection", "scopes"}

// httpAuth reads http.auth: "auth: oauth" or a mapping of httpAuthKeys.
func (d *decoder) httpAuth(a *HTTPAuth, n *node, path string) {
	if n.kind == scalarNode {
		a.Mode = strings.ToLower(d.str(n, path))
		return
	}
	for _, e := range d.mapping(n, path) {
		p := join(path, e.key)
		switch e.key {
		case "mode":
			a.Mode = strings.ToLower(d.str(e.val, p))
		case "issuer":
			a.Issuer = d.strX(e.val, p)
		case "audience":
			a.Audience = d.strX(e.val, p)
		case "jwks_url":
			a.JWKSURL = d.strX(e.val, p)
		case "algorithms":
			a.Algorithms = d.strList(e.val, p, false)
		case "introspection":
			for _, f := range d.mapping(e.val, p) {
				q := join(p, f.key)
				switch f.key {
				case "url":
					a.Introspection.URL = d.strX(f.val, q)
				case "client_id":
					a.Introspection.ClientID = d.strX(f.val, q)
				case "client_secret":
					a.Introspection.ClientSecret = d.strX(f.val, q)
				default:
					d.unknown(f, p, []string{"url", "client_id", "client_secret"})
				}
			}
		case "scopes":
			for _, f := range d.mapping(e.val, p) {
				q := join(p, f.key)
				switch f.key {
				case "required":
					a.Scopes.Required = d.strList(f.val, q, false)
				case "profiles":
					a.Scopes.Profiles = d.strMap(f.val, q, false)
				default:
					d.unknown(f, p, []string{"required", "profiles"})
				}
			}
		default:
			d.unknown(e, path, httpAuthKeys)
		}
	}
}

// lock accepts "lock: FILE" or "lock: {path: FILE}".
func (d *decoder) lock(l *Lock, n *node, path string) {
	if n.kind == scalarNode {
		l.Path = d.strX(n, path)
		return
	}
	for _, e := range d.mapping(n, path) {
		p := join(path, e.key)
		switch e.key {
		case "path":
			l.Path = d.strX(e.val, p)
		default:
			d.unknown(e, path, []string{"path"})
		}
	}
}

func (d *decoder) audit(a *Audit, n *node, path string) {
	for _, e := range d.mapping(n, path) {
		p := join(path, e.key)
		switch e.key {
		case "output":
			a.Output = d.strX(e.val, p)
		case "max_size_mb":
			a.MaxSizeMB = int(d.integer(e.val, p))
		case "max_files":
			a.MaxFiles = int(d.integer(e.val, p))
		case "arguments":
			a.Arguments = d.boolean(e.val, p)
		default:
			d.unknown(e, path, []string{"output", "max_size_mb", "max_files", "arguments"})
		}
	}
}

func (d *decoder) log(l *Log, n *node, path string) {
	for _, e := range d.mapping(n, path) {
		p := join(path, e.key)
		switch e.key {
		case "level":
			l.Level = strings.ToLower(d.str(e.val, p))
		case "format":
			l.Format = strings.ToLower(d.str(e.val, p))
		default:
			d.unknown(e, path, []string{"level", "format"})
		}
	}
}
