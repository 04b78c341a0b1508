package diagram

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// http nodes take their URL from the diagram and from the run's input, so
// whoever can run a diagram could otherwise make the hub fetch what only
// the hub can reach: a cloud metadata service, an admin port on
// loopback, a database on the private network. By default they may
// connect to public addresses only. The check is made on the address
// being connected to, after DNS resolution (a name that resolves to
// 127.0.0.1, or is rebound to it between two lookups, is refused), on
// every connection, so redirects are checked too. The operator opens
// hosts or networks with the pack's http_allow_hosts and http_allow_cidrs
// settings.

// A blockedRange is a network http nodes refuse unless allowed.
type blockedRange struct {
	prefix netip.Prefix
	rule   string
}

// blockedRanges are refused by default. IPv4-mapped IPv6 addresses are
// checked as the IPv4 address they carry. Made on first use.
var blockedRanges = sync.OnceValue(func() []blockedRange {
	var out []blockedRange
	for rule, cidrs := range map[string][]string{
		"unspecified": {"0.0.0.0/8", "::/128"},
		"loopback":    {"127.0.0.0/8", "::1/128"},
		"private":     {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7", "fec0::/10"},
		"link-local":  {"169.254.0.0/16", "fe80::/10"},
		"CGNAT":       {"100.64.0.0/10"},
		"multicast":   {"224.0.0.0/4", "ff00::/8"},
		"reserved":    {"240.0.0.0/4"}, // and 255.255.255.255, broadcast
	} {
		for _, c := range cidrs {
			out = append(out, blockedRange{netip.MustParsePrefix(c), rule})
		}
	}
	return out
})

// nat64 is the well-known NAT64 prefix: its addresses reach the IPv4
// address in their last four bytes, through a gateway.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// blockedRule returns the rule that refuses a by default, or "".
func blockedRule(a netip.Addr) string {
	a = a.Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		if r := blockedRule(netip.AddrFrom4([4]byte(b[12:]))); r != "" {
			return r + " (through NAT64)"
		}
	}
	for _, br := range blockedRanges() {
		if br.prefix.Contains(a) {
			return br.rule
		}
	}
	return ""
}

// A netPolicy decides what http nodes may connect to.
type netPolicy struct {
	hosts []hostRule     // from http_allow_hosts
	cidrs []netip.Prefix // from http_allow_cidrs
}

// A hostRule is one http_allow_hosts entry: a host name, an IP address,
// or *.domain (any name below domain), optionally with :port.
type hostRule struct {
	host string // lower case; "*.example.com" for a wildcard
	port string // "" for any port
}

// parseHostRule reads one http_allow_hosts entry.
func parseHostRule(s string) (hostRule, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return hostRule{}, errors.New("empty host")
	}
	if strings.Contains(s, "/") {
		return hostRule{}, fmt.Errorf("%q is not a host (a network such as %s goes in http_allow_cidrs)", s, s)
	}
	r := hostRule{host: s}
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, perr := strconv.Atoi(p)
		if perr != nil || n < 1 || n > 65535 {
			return hostRule{}, fmt.Errorf("%q: port %q is not a number from 1 to 65535", s, p)
		}
		r = hostRule{host: h, port: p}
	} else if strings.Count(s, ":") > 1 {
		r.host = strings.Trim(s, "[]") // a bare IPv6 address
	}
	r.host = strings.TrimSuffix(r.host, ".")
	name := strings.TrimPrefix(r.host, "*.")
	if _, err := netip.ParseAddr(name); err == nil {
		if name != r.host {
			return hostRule{}, fmt.Errorf("%q: a wildcard goes before a domain name, not an address", s)
		}
		return r, nil
	}
	if !hostNamePattern().MatchString(name) {
		return hostRule{}, fmt.Errorf("%q is not a host name, an IP address or *.domain", s)
	}
	return r, nil
}

// hostNamePattern matches a DNS name in ASCII (IDNs as punycode).
var hostNamePattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$`)
})

func (r hostRule) matches(host, port string) bool {
	if r.port != "" && r.port != port {
		return false
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if a, err := netip.ParseAddr(host); err == nil {
		b, err := netip.ParseAddr(r.host)
		return err == nil && a.Unmap() == b.Unmap()
	}
	if suffix, ok := strings.CutPrefix(r.host, "*"); ok {
		return strings.HasSuffix(host, suffix)
	}
	return host == r.host
}

func (p *netPolicy) hostAllowed(host, port string) bool {
	for _, r := range p.hosts {
		if r.matches(host, port) {
			return true
		}
	}
	return false
}

// A RefusedError is a connection of an http node that the pack's address
// rules refused.
type RefusedError struct {
	Host string     // as the URL names it
	Port string     // as dialled
	Addr netip.Addr // the address it resolved to
	Rule string     // which default rule refused it: loopback, private, ...
}

func (e *RefusedError) Error() string {
	what := fmt.Sprintf("%s resolves to %s, a %s address", e.Host, e.Addr, e.Rule)
	if a, err := netip.ParseAddr(e.Host); err == nil && a == e.Addr {
		what = fmt.Sprintf("%s is a %s address", e.Host, e.Rule)
	}
	bits := 32
	if e.Addr.Is6() {
		bits = 128
	}
	hostPort := net.JoinHostPort(e.Host, e.Port)
	return fmt.Sprintf("%s, which http nodes may not reach by default; to allow it, add %q to the diagram pack's http_allow_hosts setting, or %s to its http_allow_cidrs setting",
		what, hostPort, netip.PrefixFrom(e.Addr, bits))
}

// check is the dialer's last word on one address about to be connected
// to, for a URL host that no http_allow_hosts entry names.
func (p *netPolicy) check(host, port string, a netip.Addr) error {
	a = a.Unmap().WithZone("")
	rule := blockedRule(a)
	if rule == "" {
		return nil
	}
	for _, c := range p.cidrs {
		if c.Contains(a) {
			return nil
		}
	}
	return &RefusedError{Host: host, Port: port, Addr: a, Rule: rule}
}

// dialContext is the http nodes' transport's dialer. A host that
// http_allow_hosts names is dialled as it is; any other is checked, address
// by address, as the connection is made.
func (p *netPolicy) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if !p.hostAllowed(host, port) {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("cannot check the address %q: %v", address, err)
			}
			return p.check(host, port, ap.Addr())
		}
	}
	return d.DialContext(ctx, network, addr)
}

// defaultClient is the client of an engine that was given none: the
// address rules with nothing allowed.
var defaultClient = sync.OnceValue((&netPolicy{}).client)

// maxRedirects bounds the redirects one http node follows.
const maxRedirects = 10

// client returns the http nodes' client: no proxy from the environment
// (a proxy would resolve and connect where the checks cannot see), the
// checked dialer, bounded redirects and response headers.
func (p *netPolicy) client() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext:            p.dialContext,
			ForceAttemptHTTP2:      true,
			MaxIdleConns:           32,
			IdleConnTimeout:        30 * time.Second,
			TLSHandshakeTimeout:    10 * time.Second,
			ExpectContinueTimeout:  time.Second,
			MaxResponseHeaderBytes: 1 << 20,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("redirect to %s refused: http nodes only fetch http and https URLs", req.URL.Redacted())
			}
			return nil
		},
	}
}
