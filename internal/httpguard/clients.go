package httpguard

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Clients is an allowlist of client addresses: single addresses and
// CIDR prefixes. The zero value allows every client.
type Clients struct {
	prefixes []netip.Prefix
}

// ParseNetwork reads a network such as 10.0.0.0/8, or one address (a /32
// or /128 network). A network with bits set past its length is refused
// with the network it probably means.
func ParseNetwork(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if p, err := netip.ParsePrefix(s); err == nil {
		if p != p.Masked() {
			return netip.Prefix{}, fmt.Errorf("%q has bits set past its /%d: write %s", s, p.Bits(), p.Masked())
		}
		return p, nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	return netip.Prefix{}, fmt.Errorf("%q is not a network such as 10.0.0.0/8 or fd00::/8, or an IP address", s)
}

// ParseClients parses entries, each an IP address ("10.0.0.7", "::1") or
// a CIDR prefix ("10.0.0.0/8") as [ParseNetwork] reads them. An entry
// that is neither gets an error naming it.
func ParseClients(entries []string) (Clients, error) {
	var c Clients
	for _, e := range entries {
		p, err := ParseNetwork(e)
		if err != nil {
			return Clients{}, fmt.Errorf("client %q: want an IP address or a CIDR prefix (10.0.0.7, 10.0.0.0/8, ::1): %v", strings.TrimSpace(e), err)
		}
		if a := p.Addr(); a.Is4In6() && p.IsSingleIP() {
			p = netip.PrefixFrom(a.Unmap(), 32) // as Allows sees an IPv4 client
		}
		c.prefixes = append(c.prefixes, p)
	}
	return c, nil
}

// Empty reports whether c allows every client.
func (c Clients) Empty() bool { return len(c.prefixes) == 0 }

// Allows reports whether the client at addr (an IP, or host:port as in
// http.Request.RemoteAddr) is allowed.
func (c Clients) Allows(addr string) bool {
	if c.Empty() {
		return true
	}
	if host, _, err := net.SplitHostPort(addr); err == nil {
		addr = host
	}
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	a = a.Unmap().WithZone("")
	for _, p := range c.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// String lists c's entries, comma-separated.
func (c Clients) String() string {
	s := make([]string, len(c.prefixes))
	for i, p := range c.prefixes {
		if p.IsSingleIP() {
			s[i] = p.Addr().String()
		} else {
			s[i] = p.String()
		}
	}
	return strings.Join(s, ",")
}

// Handler refuses, with 403, the requests of clients c does not allow,
// and passes the others to next.
func (c Clients) Handler(next http.Handler) http.Handler {
	if c.Empty() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !c.Allows(r.RemoteAddr) {
			http.Error(w, "forbidden: this client's address is not in the listener's allowlist", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
