package registry

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
)

// InstallOptions are what the user gives "junction add" beside the
// server.json.
type InstallOptions struct {
	// Env sets environment variables of a package (-env NAME=VALUE).
	Env map[string]string
	// Headers sets headers of a remote (-header NAME=VALUE).
	Headers map[string]string
	// Args sets arguments (-arg NAME=VALUE): a named argument by its flag
	// (with or without its dashes), a positional one by its valueHint, a
	// {variable} of a value or of a remote's URL by its name. Repeated
	// arguments take several values.
	Args map[string][]string
	// Package picks the kind to use: npm, pypi, oci or remote; "" takes
	// the first this machine can run, packages before remotes.
	Package string
	// AllowOCI lets an OCI image run (with docker run); off by default,
	// since a container is a bigger step than a package.
	AllowOCI bool
	// LookPath finds a command (npx, uvx, docker) on this machine's PATH;
	// nil finds none.
	LookPath func(string) bool
}

// Entry is a junction server entry made from a server.json.
type Entry struct {
	// Kind is npm, pypi, oci or remote.
	Kind string `json:"kind"`
	// Pinned says what exactly runs: "npm @scope/pkg@1.2.3", "remote https://...".
	Pinned string `json:"pinned"`

	// Transport is junction's: stdio, http or sse.
	Transport string            `json:"transport"`
	Command   string            `json:"command,omitempty"`
	Args      []string          `json:"args,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	URL       string            `json:"url,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`

	// Placeholders are the ${VAR}s written for values the user did not
	// give: junction reads them from its environment when it loads the
	// config.
	Placeholders []Placeholder `json:"placeholders,omitempty"`
	// Optional are inputs the server takes but does not need, left out.
	Optional []string `json:"optional,omitempty"`
	// Skipped are the server's other packages and remotes, and why they
	// were not used.
	Skipped []string `json:"skipped,omitempty"`

	// From names the registry entry, as the config's "registry" key
	// keeps it; BuildEntry sets its name and version, the caller its URL.
	From Ref `json:"from"`
}

// Ref names a registry entry: what a server entry was made from.
type Ref struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	URL     string `json:"url,omitempty"` // the registry's base URL
}

// Placeholder is one ${VAR} written into an entry.
type Placeholder struct {
	Var         string `json:"var"`
	For         string `json:"for"` // "environment variable GITHUB_TOKEN", "header Authorization"
	Description string `json:"description,omitempty"`
	Secret      bool   `json:"secret,omitempty"`
}

// Config is the entry as junction's config file has it ("servers": {NAME: ...}).
func (e *Entry) Config() json.RawMessage {
	var from *Ref
	if e.From.Name != "" {
		from = &e.From
	}
	var v any
	if e.Transport == "stdio" {
		v = struct {
			Command  string            `json:"command"`
			Args     []string          `json:"args,omitempty"`
			Env      map[string]string `json:"env,omitempty"`
			Registry *Ref              `json:"registry,omitempty"`
		}{e.Command, e.Args, e.Env, from}
	} else {
		v = struct {
			Transport string            `json:"transport"`
			URL       string            `json:"url"`
			Headers   map[string]string `json:"headers,omitempty"`
			Registry  *Ref              `json:"registry,omitempty"`
		}{e.Transport, e.URL, e.Headers, from}
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return b
}

// BuildEntry turns a server.json into a junction server entry, pinned to
// the exact version the server.json names: npm packages run with
// "npx -y PKG@VERSION", PyPI ones with "uvx PKG==VERSION", OCI images
// (with AllowOCI) with "docker run -i --rm IMAGE:TAG", remotes by URL and
// transport. Values the user gives fill environment variables, headers
// and arguments; a required one not given becomes a ${VAR} placeholder
// (listed in Placeholders), never a secret in clear: a secret given as a
// plain value is refused, it must be a ${VAR} reference.
func BuildEntry(s *ServerJSON, o InstallOptions) (*Entry, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	want := strings.ToLower(o.Package)
	switch want {
	case "", TypeNPM, TypePyPI, TypeOCI, "remote":
	default:
		return nil, fmt.Errorf("-package %s: want npm, pypi, oci or remote", o.Package)
	}
	var skipped []string
	for i := range s.Packages {
		p := &s.Packages[i]
		kind := strings.ToLower(p.RegistryType)
		if want != "" && kind != want {
			continue
		}
		if why := runnable(p, o); why != "" {
			skipped = append(skipped, fmt.Sprintf("%s package %s: %s", kind, p.Identifier, why))
			continue
		}
		e, err := buildPackage(s, p, o)
		if err != nil {
			return nil, err
		}
		e.Skipped = skipped
		e.From = Ref{Name: s.Name, Version: s.Version}
		return e, nil
	}
	for i := range s.Remotes {
		r := &s.Remotes[i]
		if want != "" && want != "remote" {
			continue
		}
		if r.Type != TransportStreamableHTTP && r.Type != TransportSSE {
			skipped = append(skipped, fmt.Sprintf("remote %s: transport %q is not streamable-http or sse", r.URL, r.Type))
			continue
		}
		e, err := buildRemote(s, r, o)
		if err != nil {
			return nil, err
		}
		e.Skipped = skipped
		e.From = Ref{Name: s.Name, Version: s.Version}
		return e, nil
	}
	if want != "" && len(skipped) == 0 {
		return nil, fmt.Errorf("%s@%s has no %s %s (it has: %s)", s.Name, s.Version, want, map[bool]string{true: "remote", false: "package"}[want == "remote"], kinds(s))
	}
	if len(skipped) == 0 {
		return nil, fmt.Errorf("%s@%s lists no packages and no remotes: there is nothing to run", s.Name, s.Version)
	}
	return nil, fmt.Errorf("%s@%s has nothing this machine can run:\n  %s", s.Name, s.Version, strings.Join(skipped, "\n  "))
}

func kinds(s *ServerJSON) string {
	k := s.PackageTypes()
	if len(s.Remotes) > 0 {
		k = append(k, "remote")
	}
	if len(k) == 0 {
		return "nothing"
	}
	return strings.Join(k, ", ")
}

// runnable says why this machine cannot run p, or "".
func runnable(p *Package, o InstallOptions) string {
	look := o.LookPath
	if look == nil {
		look = func(string) bool { return false }
	}
	if p.Transport.Type != TransportStdio {
		return fmt.Sprintf("it serves over %s from a process of its own, and junction add runs stdio packages only; use a remote if the server has one", p.Transport.Type)
	}
	switch strings.ToLower(p.RegistryType) {
	case TypeNPM:
		if !look("npx") {
			return "npx is not on PATH; install Node.js (which brings npx), or pick a remote with -package remote"
		}
	case TypePyPI:
		if !look("uvx") {
			return "uvx is not on PATH; install uv (https://docs.astral.sh/uv/), or pick a remote with -package remote"
		}
	case TypeOCI:
		if !o.AllowOCI {
			return "an OCI image runs as a container (docker run); add -oci to allow it"
		}
		if !look("docker") {
			return "docker is not on PATH; install Docker to run OCI images"
		}
	default:
		return fmt.Sprintf("junction add cannot install %s packages yet (it runs npm, pypi and, with -oci, oci)", p.RegistryType)
	}
	return ""
}

// rangeLike matches versions that are not one exact version.
var rangeLike = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(latest|\*|x)$|^[\^~<>=]|[*\s]|\.(x|X)(\.|$)|\|\|`)
})

func pinnedVersion(v string) bool { return v != "" && !rangeLike().MatchString(v) }

func buildPackage(s *ServerJSON, p *Package, o InstallOptions) (*Entry, error) {
	b := newBuilder(s, o)
	kind := strings.ToLower(p.RegistryType)
	e := &Entry{Kind: kind, Transport: "stdio"}
	if len(o.Headers) > 0 {
		return nil, fmt.Errorf("-header is for remotes; %s runs as a %s package (environment variables: -env)", s.Name, kind)
	}
	runtime, err := b.arguments(p.RuntimeArguments, "runtimeArguments")
	if err != nil {
		return nil, err
	}
	pkgArgs, err := b.arguments(p.PackageArguments, "packageArguments")
	if err != nil {
		return nil, err
	}
	env, err := b.environment(p.EnvironmentVariables)
	if err != nil {
		return nil, err
	}
	switch kind {
	case TypeNPM, TypePyPI:
		if !pinnedVersion(p.Version) {
			return nil, fmt.Errorf("%s package %s of %s@%s has no exact version (%q), and junction add pins what it runs; ask the publisher to set packages[].version", kind, p.Identifier, s.Name, s.Version, p.Version)
		}
		if kind == TypeNPM {
			e.Command = "npx"
			e.Args = append(append(runtime, "-y", p.Identifier+"@"+p.Version), pkgArgs...)
			e.Pinned = "npm " + p.Identifier + "@" + p.Version
		} else {
			e.Command = "uvx"
			e.Args = append(append(runtime, p.Identifier+"=="+p.Version), pkgArgs...)
			e.Pinned = "pypi " + p.Identifier + "==" + p.Version
		}
	case TypeOCI:
		image, err := ociRef(p)
		if err != nil {
			return nil, fmt.Errorf("%s@%s: %w", s.Name, s.Version, err)
		}
		e.Command = "docker"
		e.Args = append([]string{"run", "-i", "--rm"}, runtime...)
		// The values stay in junction's environment for docker: -e NAME
		// passes the variable on without its value on the command line.
		for _, k := range sortedKeys(env) {
			e.Args = append(e.Args, "-e", k)
		}
		e.Args = append(append(e.Args, image), pkgArgs...)
		e.Pinned = "oci " + image
	}
	if len(env) > 0 {
		e.Env = env
	}
	if err := b.unused(); err != nil {
		return nil, err
	}
	e.Placeholders, e.Optional = b.placeholders, b.optional
	return e, nil
}

// ociRef is the image to run: the identifier when it has a tag or digest
// (the 2025-12-11 schema), else the identifier tagged with the version.
func ociRef(p *Package) (string, error) {
	id := p.Identifier
	last := id[strings.LastIndex(id, "/")+1:]
	switch {
	case strings.Contains(id, "@sha256:"):
		return id, nil
	case strings.Contains(last, ":"):
		if strings.HasSuffix(last, ":latest") {
			return "", fmt.Errorf("OCI image %s is not pinned (tag latest)", id)
		}
		return id, nil
	case pinnedVersion(p.Version):
		return id + ":" + p.Version, nil
	}
	return "", fmt.Errorf("OCI image %s has no tag, digest or version, and junction add pins what it runs", id)
}

func buildRemote(s *ServerJSON, r *Transport, o InstallOptions) (*Entry, error) {
	b := newBuilder(s, o)
	if len(o.Env) > 0 {
		return nil, fmt.Errorf("-env is for packages; %s is added as a remote (headers: -header)", s.Name)
	}
	e := &Entry{Kind: "remote", Transport: "http"}
	if r.Type == TransportSSE {
		e.Transport = "sse"
	}
	u, err := b.fill(Input{Value: r.URL, Variables: r.Variables}, "url")
	if err != nil {
		return nil, err
	}
	e.URL = u
	e.Pinned = "remote " + r.Type + " " + r.URL
	headers := map[string]string{}
	for _, h := range r.Headers {
		v, ok, err := b.input(h.Input, h.Name, o.Headers, "header "+h.Name, envVarName(shortName(s.Name)+"_"+h.Name))
		if err != nil {
			return nil, err
		}
		if ok {
			headers[h.Name] = v
		}
	}
	for k, v := range o.Headers { // headers the server.json does not list
		if _, ok := headers[k]; !ok && !slices.ContainsFunc(r.Headers, func(h KeyValueInput) bool { return strings.EqualFold(h.Name, k) }) {
			headers[k] = v
		}
	}
	if len(headers) > 0 {
		e.Headers = headers
	}
	if err := b.unused(); err != nil {
		return nil, err
	}
	e.Placeholders, e.Optional = b.placeholders, b.optional
	return e, nil
}

// builder fills inputs from the user's values.
type builder struct {
	s            *ServerJSON
	o            InstallOptions
	usedArgs     map[string]bool
	placeholders []Placeholder
	optional     []string
}

func newBuilder(s *ServerJSON, o InstallOptions) *builder {
	return &builder{s: s, o: o, usedArgs: map[string]bool{}}
}

// userArg returns the -arg values given for any of keys.
func (b *builder) userArg(keys ...string) ([]string, bool) {
	for _, k := range keys {
		if k == "" {
			continue
		}
		for _, kk := range []string{k, strings.TrimLeft(k, "-")} {
			if v, ok := b.o.Args[kk]; ok {
				b.usedArgs[kk] = true
				return v, true
			}
		}
	}
	return nil, false
}

// unused refuses -arg names that matched nothing.
func (b *builder) unused() error {
	var bad []string
	for k := range b.o.Args {
		if !b.usedArgs[k] {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return fmt.Errorf("-arg %s: %s@%s has no such argument or variable (\"junction registry show %s@%s\" lists them)", strings.Join(bad, ", "), b.s.Name, b.s.Version, b.s.Name, b.s.Version)
}

// checkSecret refuses a secret given as a plain value.
func checkSecret(in Input, what, v, suggest string) error {
	if in.IsSecret && !strings.Contains(v, "${") {
		return fmt.Errorf("%s is a secret, and junction add never writes a secret into the config in clear: give a reference to junction's environment instead, such as '${%s}' (in single quotes, so the shell leaves it), and set that variable where junction runs", what, suggest)
	}
	return nil
}

// input resolves one env var or header: the user's value, the fixed value
// of the server.json, a placeholder if required; ok is false when it is
// left out.
func (b *builder) input(in Input, name string, given map[string]string, what, placeholderVar string) (string, bool, error) {
	if v, ok := given[name]; ok {
		if err := checkSecret(in, what, v, placeholderVar); err != nil {
			return "", false, err
		}
		return v, true, nil
	}
	if in.Value != "" {
		v, err := b.fill(in, what)
		return v, err == nil, err
	}
	if in.IsRequired {
		if in.Default != "" && !in.IsSecret {
			return escape(in.Default), true, nil
		}
		return b.placeholder(placeholderVar, what, in), true, nil
	}
	b.optional = append(b.optional, describe(what, in))
	return "", false, nil
}

func (b *builder) environment(vars []KeyValueInput) (map[string]string, error) {
	env := map[string]string{}
	for _, ev := range vars {
		v, ok, err := b.input(ev.Input, ev.Name, b.o.Env, "environment variable "+ev.Name, envVarName(ev.Name))
		if err != nil {
			return nil, err
		}
		if ok {
			env[ev.Name] = v
		}
	}
	for k, v := range b.o.Env { // variables the server.json does not list
		if _, ok := env[k]; !ok && !slices.ContainsFunc(vars, func(ev KeyValueInput) bool { return ev.Name == k }) {
			env[k] = v
		}
	}
	return env, nil
}

// arguments resolves runtime or package arguments.
func (b *builder) arguments(args []Argument, field string) ([]string, error) {
	var out []string
	for _, a := range args {
		key := a.ValueHint
		if a.Type == "named" {
			key = a.Name
		}
		what := "argument " + key
		var vals []string
		if user, ok := b.userArg(a.Name, a.ValueHint); ok {
			if len(user) > 1 && !a.IsRepeated {
				return nil, fmt.Errorf("-arg %s given %d times, but the argument is not repeatable", strings.TrimLeft(key, "-"), len(user))
			}
			for _, v := range user {
				if err := checkSecret(a.Input, what, v, envVarName(strings.TrimLeft(key, "-"))); err != nil {
					return nil, err
				}
			}
			vals = user
		} else if a.Value != "" {
			v, err := b.fill(a.Input, what)
			if err != nil {
				return nil, err
			}
			vals = []string{v}
		} else if a.IsRequired {
			if a.Default != "" && !a.IsSecret {
				vals = []string{escape(a.Default)}
			} else {
				vals = []string{b.placeholder(envVarName(strings.TrimLeft(key, "-")), what, a.Input)}
			}
		} else {
			b.optional = append(b.optional, describe(what, a.Input))
			continue
		}
		for _, v := range vals {
			if a.Type != "named" {
				out = append(out, v)
				continue
			}
			if strings.EqualFold(a.Format, "boolean") {
				if v == "true" {
					out = append(out, a.Name)
				}
				continue
			}
			out = append(out, a.Name, v)
		}
	}
	return out, nil
}

var braces = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`) })

// fill resolves the {variables} of in.Value: from -arg, the variable's
// own value or default, or a placeholder if it is required. Braces that
// name no variable stay as they are (the schema says so). The rest of
// the value is the publisher's text, escaped for junction's ${...}.
func (b *builder) fill(in Input, what string) (string, error) {
	var err error
	out := braces().ReplaceAllStringFunc(escape(in.Value), func(m string) string {
		name := m[1 : len(m)-1]
		if user, ok := b.userArg(name); ok {
			if len(user) != 1 {
				err = fmt.Errorf("-arg %s given %d times; %s takes one value", name, len(user), what)
				return m
			}
			return user[0]
		}
		v, ok := in.Variables[name]
		if !ok {
			return m
		}
		switch {
		case v.Value != "":
			return escape(v.Value)
		case v.Default != "" && !v.IsSecret:
			return escape(v.Default)
		}
		return b.placeholder(envVarName(name), fmt.Sprintf("{%s} of %s", name, what), v)
	})
	return out, err
}

func (b *builder) placeholder(v, what string, in Input) string {
	if !slices.ContainsFunc(b.placeholders, func(p Placeholder) bool { return p.Var == v }) {
		b.placeholders = append(b.placeholders, Placeholder{Var: v, For: what, Description: printable(in.Description, 160), Secret: in.IsSecret})
	}
	return "${" + v + "}"
}

func describe(what string, in Input) string {
	if d := printable(in.Description, 100); d != "" {
		return what + ": " + d
	}
	return what
}

// escape keeps a publisher's text literal in junction's config, where
// ${...} is a reference.
func escape(s string) string { return strings.ReplaceAll(s, "${", "$${") }

// envVarName makes an environment variable name from s: upper case,
// other characters as _.
func envVarName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	n := strings.Trim(b.String(), "_")
	if n == "" {
		return "VALUE"
	}
	if n[0] >= '0' && n[0] <= '9' {
		n = "_" + n
	}
	return n
}

// shortName is the part of a registry name after the slash.
func shortName(name string) string { return name[strings.LastIndex(name, "/")+1:] }

// LocalName is the name "junction add" gives the server in junction's
// config by default: the part after the slash (server-everything).
func LocalName(name string) string { return shortName(name) }

func sortedKeys(m map[string]string) []string {
	k := make([]string, 0, len(m))
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}
