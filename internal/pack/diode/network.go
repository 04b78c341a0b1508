package diode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/proxy"
)

// A Network is the Diode network as the chain tools see it: the local
// client's identity, account types and device tickets. The Diode network
// cannot run inside junction; a Network is attached by an embedder (or a
// test) through [Options]. Without one, diode_get_client_info and
// diode_query_address answer "not connected to the Diode network".
type Network interface {
	// ClientInfo describes this client on the network.
	ClientInfo(ctx context.Context) (ClientInfo, error)
	// AccountType returns the account type of a 20-byte address (0x + 40
	// hex digits).
	AccountType(ctx context.Context, address string) (string, error)
	// ResolveDevice resolves an address or BNS name to device tickets.
	ResolveDevice(ctx context.Context, name string) ([]Device, error)
}

// ErrNotConnected is the original's answer when no Diode client is up.
var ErrNotConnected = errors.New("not connected to the Diode network")

// A Dialer opens the TCP connections of the file tools.
type Dialer interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// NetDialer dials ordinary hosts (names, IPv4, [IPv6]) directly and Diode
// hosts (0x + 40 hex, *.diode, *.diode.link) through a SOCKS5 proxy: a
// Diode client's, which resolves and tunnels Diode names. junction does not
// speak the Diode network itself (its client library is not published as
// a Go module; docs/design.md). The zero value dials ordinary hosts
// directly and Diode hosts through the proxy a Diode client runs by
// default, at [DefaultDiodeSOCKS5]; when none answers there, the error
// says how to start one or name another.
type NetDialer struct {
	// SOCKS5 is the host:port of a SOCKS5 proxy; empty means the Diode
	// client's default address (DetectAddr) for Diode hosts.
	SOCKS5 string
	// DetectAddr replaces DefaultDiodeSOCKS5 as the address tried when
	// SOCKS5 is empty (tests).
	DetectAddr string
	// AllViaSOCKS5 sends ordinary hosts through SOCKS5 too.
	AllViaSOCKS5 bool
	// Timeout bounds connecting; zero means 30 seconds.
	Timeout time.Duration
}

var hexAddress = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)^0x[0-9a-f]{40}$`) })

// IsDiodeHost reports whether host names a device on the Diode network:
// a raw address or a name under .diode, .diode.link or .diode.ws.
func IsDiodeHost(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	return hexAddress().MatchString(h) || h == "diode" ||
		strings.HasSuffix(h, ".diode") || strings.HasSuffix(h, ".diode.link") || strings.HasSuffix(h, ".diode.ws")
}

// DialContext implements [Dialer].
func (d *NetDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("failed to parse host %s %v", addr, err)
	}
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	direct := &net.Dialer{Timeout: timeout}
	diode := IsDiodeHost(host)
	if diode && strings.HasSuffix(strings.ToLower(strings.TrimSuffix(host, ".")), ".diode.ws") {
		return nil, errors.New("ws domain was not supported")
	}
	socks, detected := d.SOCKS5, false
	if socks == "" && diode {
		socks, detected = d.DetectAddr, true
		if socks == "" {
			socks = DefaultDiodeSOCKS5
		}
	}
	if socks == "" || (!diode && !d.AllViaSOCKS5) {
		return direct.DialContext(ctx, network, addr)
	}
	p, err := proxy.SOCKS5("tcp", socks, nil, direct)
	if err != nil {
		return nil, fmt.Errorf("socks5 %s: %v", socks, err)
	}
	conn, err := p.(proxy.ContextDialer).DialContext(ctx, network, addr)
	if err != nil {
		if detected && errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("peer host %q is on the Diode network, which junction reaches through a Diode client's SOCKS5 proxy, "+
				"and none answers at %s (the Diode client's default): start a Diode client with its proxy on (diode socksd), "+
				"or give the address of its proxy with -socks5 or %s", host, socks, EnvSOCKS5)
		}
		return nil, fmt.Errorf("dial %s via socks5 %s: %w", addr, socks, err)
	}
	return conn, nil
}

// DefaultDiodeSOCKS5 is where a Diode client's SOCKS5 proxy listens unless
// told otherwise (the address its own proxy auto-config file names).
const DefaultDiodeSOCKS5 = "127.0.0.1:1080"

// Environment variables read by [FromEnv].
const (
	EnvSOCKS5       = "DIODE_SOCKS5"     // host:port of a SOCKS5 proxy for Diode hosts
	EnvSOCKS5All    = "DIODE_SOCKS5_ALL" // "1" or "true": every host via SOCKS5
	EnvFilesToken   = "JUNCTION_FILES_TOKEN"
	EnvDeployTarget = "DIODE_MCP_DEPLOY_TARGET"
	EnvDeployUUID   = "DIODE_MCP_DEPLOY_UUID"
)
