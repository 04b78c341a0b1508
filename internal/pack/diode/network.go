package diode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync"
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
// hosts (0x + 40 hex, *.diode, *.diode.link) through a SOCKS5 proxy such as
// a Diode client's socksd. The zero value dials directly and refuses Diode
// hosts with a clear error.
type NetDialer struct {
	// SOCKS5 is the host:port of a SOCKS5 proxy; empty means none.
	SOCKS5 string
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
	if d.SOCKS5 == "" || (!diode && !d.AllViaSOCKS5) {
		if diode {
			return nil, fmt.Errorf("peer host %q is on the Diode network, which junction cannot reach by itself: run a Diode client and give its SOCKS5 address with -socks5 or %s", host, EnvSOCKS5)
		}
		return direct.DialContext(ctx, network, addr)
	}
	p, err := proxy.SOCKS5("tcp", d.SOCKS5, nil, direct)
	if err != nil {
		return nil, fmt.Errorf("socks5 %s: %v", d.SOCKS5, err)
	}
	conn, err := p.(proxy.ContextDialer).DialContext(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s via socks5 %s: %w", addr, d.SOCKS5, err)
	}
	return conn, nil
}

// Environment variables read by [FromEnv].
const (
	EnvSOCKS5       = "DIODE_SOCKS5"     // host:port of a SOCKS5 proxy for Diode hosts
	EnvSOCKS5All    = "DIODE_SOCKS5_ALL" // "1" or "true": every host via SOCKS5
	EnvFilesToken   = "JUNCTION_FILES_TOKEN"
	EnvDeployTarget = "DIODE_MCP_DEPLOY_TARGET"
	EnvDeployUUID   = "DIODE_MCP_DEPLOY_UUID"
)
