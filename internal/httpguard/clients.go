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

// ParseClients parses entries, each an IP address ("10.0.0.7", "::1") or
// a CIDR prefix ("10.0.0.0/8"). An entry that is neither gets an error
// naming it.
func ParseClients(entries []string) (Clients, error) {
	var c Clients
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if p, err := netip.ParsePrefix(e); err == nil {
			c.prefixes = append(c.prefixes, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(e)
		if err != nil {
			return Clients{}, fmt.Errorf("client %q: want an IP address or a CIDR prefix (10.0.0.7, 10.0.0.0/8, ::1)", e)
		}
		a = a.Unmap()
		c.prefixes = append(c.prefixes, netip.PrefixFrom(a, a.BitLen()))
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
