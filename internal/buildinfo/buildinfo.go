// Package buildinfo holds the version and build time of the junction
// binary. Release builds set them with
//
//	go build -ldflags "-X github.com/junction-mcp/junction/internal/buildinfo.version=v1.2.3 -X github.com/junction-mcp/junction/internal/buildinfo.buildTime=2026-11-21T12:00:00Z"
//
// Without them, Version falls back to the module version and VCS data that
// the Go toolchain records, and BuildTime to the VCS commit time.
package buildinfo

import "runtime/debug"

var (
	version   string
	buildTime string
)

// Version returns the binary's version, "dev" when nothing better is known.
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return v
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
	}
	return "dev"
}

// BuildTime returns when the binary was built (RFC 3339), or "" if unknown.
func BuildTime() string {
	if buildTime != "" {
		return buildTime
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.time" {
				return s.Value
			}
		}
	}
	return ""
}

// Revision returns the VCS revision the binary was built from, as the Go
// toolchain recorded it, or "" if unknown (a build outside a checkout).
func Revision() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return ""
}
