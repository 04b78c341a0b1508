package sandbox

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// systemReadOnly is what a dynamically linked program needs from the
// system: its loader and libraries, the certificate stores, time zones
// and the name databases (no resolver configuration: a sandbox has no
// DNS, only its proxy).
var systemReadOnly = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/ssl", "/etc/pki", "/etc/ca-certificates", "/etc/crypto-policies",
	"/etc/alternatives", "/etc/localtime", "/etc/timezone",
	"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/hosts",
	"/etc/mime.types", "/etc/os-release",
	"/etc/gitconfig", // git stops at a configuration file it may not read
}

// DefaultPaths returns what command (a name looked up in PATH, or a
// path) needs to run: ro, to read and execute (the system's libraries
// and the command's own installation), and rw, its package caches (npm's
// ~/.npm for node, npm and npx; uv's ~/.cache/uv and ~/.local/share/uv
// for uv and uvx; pip's cache for python). Only paths that exist are in
// ro; rw entries may not exist yet ([Command] creates them). Nothing of
// [SensitivePaths] is ever returned.
func DefaultPaths(command string) (ro, rw []string) {
	ro = append(ro, systemReadOnly...)
	home, _ := os.UserHomeDir()
	exe, err := exec.LookPath(command)
	if err != nil {
		return existing(ro), nil
	}
	exe, _ = filepath.Abs(exe)
	add := func(p string) {
		// Never the home directory or one above it.
		if p != "" && !underSystem(p) && (home == "" || !within(p, home)) {
			ro = append(ro, p)
		}
	}
	add(exe)
	real, err := filepath.EvalSymlinks(exe)
	if err == nil {
		add(real)
	}
	base := filepath.Base(exe)
	switch {
	case base == "node" || base == "npm" || base == "npx" || base == "corepack" || strings.HasPrefix(base, "node"):
		// The installation's prefix (bin/node, lib/node_modules/npm),
		// from the node binary next to the command.
		for _, p := range []string{exe, real} {
			if p == "" {
				continue
			}
			if prefix := filepath.Dir(filepath.Dir(p)); filepath.Base(filepath.Dir(p)) == "bin" {
				add(prefix)
			}
		}
		if home != "" {
			rw = append(rw, filepath.Join(home, ".npm"))
		}
	case base == "uv" || base == "uvx":
		if home != "" {
			rw = append(rw, filepath.Join(home, ".cache", "uv"), filepath.Join(home, ".local", "share", "uv"))
		}
	case strings.HasPrefix(base, "python") || base == "pip" || base == "pip3":
		// A virtual environment: its directory and the interpreter it
		// was made from.
		venv := filepath.Dir(filepath.Dir(exe))
		if h := venvHome(filepath.Join(venv, "pyvenv.cfg")); h != "" {
			add(venv)
			add(filepath.Dir(h)) // the base installation's prefix
		}
		if home != "" {
			rw = append(rw, filepath.Join(home, ".cache", "pip"))
		}
	default:
		// A binary of its own: its directory (data files next to it).
		if real != "" {
			add(filepath.Dir(real))
		}
	}
	return existing(dedupe(ro)), dedupe(rw)
}

func underSystem(p string) bool {
	for _, s := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64"} {
		if within(s, p) {
			return true
		}
	}
	return false
}

// venvHome returns the "home" directory (the base interpreter's bin) of
// a pyvenv.cfg, or "".
func venvHome(cfg string) string {
	f, err := os.Open(cfg)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), "=")
		if ok && strings.TrimSpace(k) == "home" {
			v = strings.TrimSpace(v)
			if filepath.IsAbs(v) && !underSystem(v) {
				return v
			}
			return ""
		}
	}
	return ""
}

func existing(paths []string) []string {
	out := paths[:0:0]
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

func dedupe(paths []string) []string {
	seen := map[string]bool{}
	out := paths[:0:0]
	for _, p := range paths {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}
