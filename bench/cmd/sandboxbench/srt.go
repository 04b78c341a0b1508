package main

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// srtSystemRead is what a program needs from the system to run, the
// same list as junction's sandbox allows (internal/sandbox's
// systemReadOnly), so that the two policies read alike.
var srtSystemRead = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/ssl", "/etc/pki", "/etc/ca-certificates", "/etc/crypto-policies",
	"/etc/alternatives", "/etc/localtime", "/etc/timezone",
	"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/hosts",
	"/etc/mime.types", "/etc/os-release",
}

// writeSrtSettings writes a sandbox-runtime settings file that allows
// what junction's level strict allows a server: read the system's
// libraries and the paths in read (the server's own directory or
// installation), write the paths in write, and reach hosts (host:port)
// through srt's proxy. srt reads everything unless told otherwise
// (denyRead), so it denies "/" and allows back the list; srt's own
// package (its seccomp helper runs inside the sandbox) and /tmp (its
// proxy's socket) are added.
func writeSrtSettings(path, srt string, read, write, hosts []string) error {
	allowRead := []string{}
	for _, p := range append(append(append([]string{}, srtSystemRead...), read...), write...) {
		if _, err := os.Stat(p); err == nil {
			allowRead = append(allowRead, p)
		}
	}
	if real, err := filepath.EvalSymlinks(srt); err == nil {
		// node_modules/@anthropic-ai/sandbox-runtime/dist/cli.js
		allowRead = append(allowRead, filepath.Dir(filepath.Dir(real)))
	}
	// srt's proxy bridge is a unix socket in /tmp that its denyRead of
	// "/" would hide (every proxied request then fails): /tmp stays
	// readable, not writable.
	allowRead = append(allowRead, os.TempDir())
	if hosts == nil {
		hosts = []string{}
	}
	if write == nil {
		write = []string{}
	}
	settings := map[string]any{
		"network": map[string]any{
			"allowedDomains": hosts,
			"deniedDomains":  []string{},
		},
		"filesystem": map[string]any{
			"denyRead":   []string{"/"},
			"allowRead":  allowRead,
			"allowWrite": write,
			"denyWrite":  []string{},
		},
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
