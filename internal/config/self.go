package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The environment marker a junction hub gives every stdio server it
// starts, so that a junction among them knows it was started by a hub,
// for which config file and as which entry. [Config.SkipSelf] reads it.
const (
	EnvHubPID    = "JUNCTION_HUB_PID"    // the starting hub's process id
	EnvHubConfig = "JUNCTION_HUB_CONFIG" // the config file it serves, absolute
	EnvHubSource = "JUNCTION_HUB_SOURCE" // the entry it started this process as
	EnvHubDepth  = "JUNCTION_HUB_DEPTH"  // 1 for a hub's child, 2 for a grandchild hub's, ...
)

// MaxHubDepth is how deeply hubs may nest: a junction whose marker says it
// is this deep starts no stdio server, which ends any cycle of config
// files that run each other through wrappers the other checks cannot see.
const MaxHubDepth = 4

// Self describes the running junction, for [Config.SelfReferences].
type Self struct {
	// Executable is the running binary (os.Executable); empty skips the
	// command check.
	Executable string
	// ConfigPath is the config file being served; empty skips the marker's
	// same-file check.
	ConfigPath string
	// Getenv reads this process's environment: the marker and PATH.
	Getenv func(string) string
}

// SelfRef is a server entry that would run this junction again.
type SelfRef struct {
	Name   string
	Reason string
}

func (r SelfRef) String() string { return r.Name + ": " + r.Reason }

// SelfReferences returns the enabled servers that would start junction
// itself, sorted by name:
//
//   - a stdio server whose command is this binary (the same file, through
//     any symlink, looked up on PATH as the child would) run with "serve"
//     for this same config file (its -config, or else JUNCTION_CONFIG in
//     its environment); junction serving another config, or "junction
//     mcp", is an ordinary upstream;
//   - the entry the parent hub started this process as (the marker's
//     JUNCTION_HUB_SOURCE), when the parent serves the same config file:
//     the entry runs junction by some path the first check cannot see
//     (a wrapper script, npx, go run);
//   - every stdio server, when the marker says hubs are already nested
//     MaxHubDepth deep.
func (c *Config) SelfReferences(self Self) []SelfRef {
	getenv := self.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var exe os.FileInfo
	if self.Executable != "" {
		exe, _ = os.Stat(self.Executable)
	}
	parentSource := ""
	if pc := getenv(EnvHubConfig); pc != "" && self.ConfigPath != "" && sameFile(pc, self.ConfigPath) {
		parentSource = getenv(EnvHubSource)
	}
	depth, _ := strconv.Atoi(getenv(EnvHubDepth))
	var out []SelfRef
	for _, name := range c.Enabled() {
		s := c.Servers[name]
		if s.Transport != TransportStdio {
			continue
		}
		switch {
		case name == parentSource:
			out = append(out, SelfRef{name, fmt.Sprintf("this is the entry junction (pid %s) started this junction as, from the same config file (%s is set); serving it would start junction again", getenv(EnvHubPID), EnvHubSource)})
		case exe != nil && self.ConfigPath != "" && servesConfig(s, getenv, self.ConfigPath) && sameFileInfo(exe, lookPath(s.Command, s.Cwd, getenv)):
			out = append(out, SelfRef{name, fmt.Sprintf("it runs this junction binary (%s serve) on this same config file; serving it would start junction again", s.Command)})
		case depth >= MaxHubDepth:
			out = append(out, SelfRef{name, fmt.Sprintf("junction hubs are already nested %d deep (%s); not starting stdio servers ends a loop of config files that run each other", depth, EnvHubDepth)})
		}
	}
	return out
}

// SkipSelf disables the servers [Config.SelfReferences] finds and adds a
// warning for each, which "junction serve" logs and "config check"
// prints. It returns what it disabled.
func (c *Config) SkipSelf(self Self) []SelfRef {
	refs := c.SelfReferences(self)
	for _, r := range refs {
		c.Servers[r.Name].Disabled = true
		p := c.serverPath(r.Name)
		c.Warnings = append(c.Warnings, Warning{Line: c.Line(p), Path: p, Msg: "skipped: " + r.Reason})
	}
	if len(refs) > 0 {
		sortWarnings(c.Warnings)
	}
	return refs
}

// envConfig is the variable junction reads its config file from when
// -config is not given.
const envConfig = "JUNCTION_CONFIG"

// servesConfig reports whether server s, if it is junction, runs "serve"
// on the config file path: given with -config, or else through
// JUNCTION_CONFIG (the entry's env, else the one it inherits).
func servesConfig(s *Server, getenv func(string) string, path string) bool {
	if len(s.Args) == 0 || s.Args[0] != "serve" {
		return false
	}
	cfg := ""
	args := s.Args[1:]
	for i := 0; i < len(args); i++ {
		a := strings.TrimPrefix(args[i], "-")
		switch {
		case a == "-config" || a == "config":
			if i+1 < len(args) {
				cfg = args[i+1]
			}
			i++
		case strings.HasPrefix(a, "-config=") || strings.HasPrefix(a, "config="):
			_, cfg, _ = strings.Cut(a, "=")
		}
	}
	if cfg == "" {
		if v, ok := s.Env[envConfig]; ok {
			cfg = v
		} else if !slices.Contains(s.UnsetEnv, envConfig) {
			cfg = getenv(envConfig)
		}
	}
	if cfg == "" {
		return false
	}
	if !filepath.IsAbs(cfg) && s.Cwd != "" {
		cfg = filepath.Join(s.Cwd, cfg)
	}
	return sameFile(cfg, path)
}

// lookPath finds command as the child would: a path with a separator is
// taken relative to the server's cwd (or ours), a bare name is looked up
// on PATH. It returns nil when there is no such file.
func lookPath(command, cwd string, getenv func(string) string) os.FileInfo {
	if command == "" {
		return nil
	}
	if strings.ContainsAny(command, `/\`) {
		if !filepath.IsAbs(command) && cwd != "" {
			command = filepath.Join(cwd, command)
		}
		fi, _ := statExe(command)
		return fi
	}
	for _, dir := range filepath.SplitList(getenv("PATH")) {
		if dir == "" {
			dir = "."
		}
		if fi, err := statExe(filepath.Join(dir, command)); err == nil {
			return fi
		}
	}
	return nil
}

// statExe stats a program, trying ".exe" too (Windows hosts often omit it).
func statExe(path string) (os.FileInfo, error) {
	fi, err := os.Stat(path)
	if err == nil && !fi.IsDir() {
		return fi, nil
	}
	if !strings.HasSuffix(strings.ToLower(path), ".exe") {
		if fi, err2 := os.Stat(path + ".exe"); err2 == nil && !fi.IsDir() {
			return fi, nil
		}
	}
	if err == nil {
		err = fmt.Errorf("%s is a directory", path)
	}
	return nil, err
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

func sameFileInfo(a, b os.FileInfo) bool {
	return a != nil && b != nil && os.SameFile(a, b)
}
