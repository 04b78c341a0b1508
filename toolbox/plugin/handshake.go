package plugin

import (
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
)

// The handshake is the one line a plugin prints on its standard output
// once it is ready to serve:
//
//	JUNCTION_TOOLBOX|<contract version>|<network>|<address>[|<protocol>]
//
// for example
//
//	JUNCTION_TOOLBOX|1|tcp|127.0.0.1:41234|grpc
//	JUNCTION_TOOLBOX|1|unix|/tmp/junction-toolbox-4242-1234/plugin.sock|connect
//
// network is tcp (a loopback address) or unix (an absolute socket path);
// protocol is the Connect-RPC protocol the hub should speak: connect (the
// default when the field is absent; works over HTTP/1.1), grpc (needs
// HTTP/2, so the plugin serves h2c) or grpcweb. Lines before the handshake
// are logged and skipped.
const (
	// HandshakePrefix starts the handshake line.
	HandshakePrefix = "JUNCTION_TOOLBOX"
	// ContractVersion is the version of the toolbox contract this package
	// speaks, the second handshake field.
	ContractVersion = 1
)

// Environment variables the hub sets for a plugin it spawns.
const (
	// EnvMagic is set to "1" when a hub runs the plugin. A plugin run by
	// hand without it can say how it is meant to be used.
	EnvMagic = "JUNCTION_TOOLBOX"
	// EnvToken holds a random secret; the plugin must refuse requests
	// whose Authorization header is not "Bearer <token>". Empty means no
	// check (a plugin run by hand).
	EnvToken = "JUNCTION_TOOLBOX_TOKEN"
	// EnvUnixDir, when set, asks the plugin to listen on a unix socket in
	// that directory instead of a loopback TCP port.
	EnvUnixDir = "JUNCTION_TOOLBOX_UNIX_DIR"
)

// Protocols a handshake may name.
const (
	ProtocolConnect = "connect"
	ProtocolGRPC    = "grpc"
	ProtocolGRPCWeb = "grpcweb"
)

// A Handshake is the parsed handshake line.
type Handshake struct {
	Version  int
	Network  string // "tcp" or "unix"
	Address  string // host:port, or a socket path
	Protocol string // ProtocolConnect, ProtocolGRPC or ProtocolGRPCWeb
}

// String formats h as a handshake line (without the newline).
func (h Handshake) String() string {
	p := h.Protocol
	if p == "" {
		p = ProtocolConnect
	}
	return strings.Join([]string{HandshakePrefix, strconv.Itoa(h.Version), h.Network, h.Address, p}, "|")
}

// IsHandshake reports whether line looks like a handshake (starts with
// the prefix and a bar), valid or not.
func IsHandshake(line string) bool {
	return strings.HasPrefix(strings.TrimSpace(line), HandshakePrefix+"|")
}

// ParseHandshake parses and checks one handshake line. It accepts only
// [ContractVersion], loopback TCP addresses and absolute unix socket paths.
func ParseHandshake(line string) (Handshake, error) {
	line = strings.TrimRight(line, "\r\n")
	line = strings.TrimSpace(line)
	fields := strings.Split(line, "|")
	if len(fields) < 4 || len(fields) > 5 || fields[0] != HandshakePrefix {
		return Handshake{}, fmt.Errorf("toolbox handshake %q: want %s|<version>|<network>|<address>[|<protocol>]", clip(line), HandshakePrefix)
	}
	v, err := strconv.Atoi(fields[1])
	if err != nil || v < 1 {
		return Handshake{}, fmt.Errorf("toolbox handshake: version %q is not a positive integer", clip(fields[1]))
	}
	if v != ContractVersion {
		return Handshake{}, fmt.Errorf("toolbox handshake: plugin speaks contract version %d, this hub speaks %d", v, ContractVersion)
	}
	h := Handshake{Version: v, Network: fields[2], Address: fields[3], Protocol: ProtocolConnect}
	if len(fields) == 5 {
		h.Protocol = fields[4]
	}
	switch h.Protocol {
	case ProtocolConnect, ProtocolGRPC, ProtocolGRPCWeb:
	default:
		return Handshake{}, fmt.Errorf("toolbox handshake: unknown protocol %q (want connect, grpc or grpcweb)", clip(h.Protocol))
	}
	switch h.Network {
	case "tcp":
		host, port, err := net.SplitHostPort(h.Address)
		if err != nil {
			return Handshake{}, fmt.Errorf("toolbox handshake: tcp address %q: %v", clip(h.Address), err)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return Handshake{}, fmt.Errorf("toolbox handshake: tcp address %q: bad port", clip(h.Address))
		}
		if host != "localhost" {
			ip, err := netip.ParseAddr(host)
			if err != nil || !ip.IsLoopback() {
				return Handshake{}, fmt.Errorf("toolbox handshake: tcp address %q: plugins must listen on a loopback address", clip(h.Address))
			}
		}
	case "unix":
		if !filepath.IsAbs(h.Address) {
			return Handshake{}, fmt.Errorf("toolbox handshake: unix socket path %q is not absolute", clip(h.Address))
		}
	default:
		return Handshake{}, fmt.Errorf("toolbox handshake: unknown network %q (want tcp or unix)", clip(h.Network))
	}
	return h, nil
}

// clip shortens s for an error message.
func clip(s string) string {
	const max = 120
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
