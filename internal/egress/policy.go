package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Pattern is one allowlist entry: a destination host (an exact name, a
// "*." wildcard over a domain's subdomains, an IP address or a CIDR
// block) and the ports it allows. [ParsePattern] reads the forms.
type Pattern struct {
	name     string       // host name, lower case, no trailing dot; for a wildcard the domain under "*."
	wildcard bool         // name's subdomains, not name itself
	prefix   netip.Prefix // valid for an IP or CIDR pattern (unmapped, masked)
	port     uint16       // one port; 0 with !anyPort means the web ports 80 and 443
	anyPort  bool
}

// DefaultPorts are the ports a pattern without ":port" allows.
var DefaultPorts = []uint16{80, 443}

// ParsePattern reads one allowlist entry, host[:port]:
//
//	api.example.com        that name only (case-insensitive, a trailing dot ignored)
//	*.example.com          its subdomains at any depth, not example.com itself
//	203.0.113.7            that address; IPv6 as 2001:db8::7 or [2001:db8::7]
//	203.0.113.0/24         a CIDR block; with a port, [2001:db8::/32]:443
//	api.example.com:8443   one port
//	api.example.com:*      any port
//
// Without a port an entry allows only the web ports 80 and 443
// ([DefaultPorts]), so that a name meant for HTTPS does not also open SSH
// or a database on the same host. A bare "*" (or a /0 block) is refused:
// an egress allowlist names its destinations. So is a wildcard directly
// over a top-level domain (*.com), a wildcard anywhere but the leading
// label, an address with a zone (fe80::1%eth0), and an unspecified,
// multicast or broadcast address, where the proxy never connects.
//
// IPv4-mapped IPv6 forms (::ffff:10.0.0.1) are read as the IPv4 address.
// Names are ASCII: write an internationalized name in its xn-- form.
func ParsePattern(s string) (Pattern, error) {
	raw := s
	s = strings.TrimSpace(s)
	if s == "" {
		return Pattern{}, errors.New("empty entry: write a host name, *.domain, an IP address or a CIDR block")
	}
	host, portStr, hasPort, err := splitPattern(s)
	if err != nil {
		return Pattern{}, fmt.Errorf("%q: %w", raw, err)
	}
	bracketed := strings.HasPrefix(s, "[")
	var p Pattern
	if hasPort {
		if portStr == "*" {
			p.anyPort = true
		} else {
			port, err := parsePort(portStr)
			if err != nil {
				return Pattern{}, fmt.Errorf("%q: %w", raw, err)
			}
			p.port = port
		}
	}
	if host == "*" {
		return Pattern{}, fmt.Errorf("%q would allow every destination: name each host (api.example.com) or domain (*.example.com)", raw)
	}
	if pfx, ok, err := parseIPHost(host); ok {
		if err != nil {
			return Pattern{}, fmt.Errorf("%q: %w", raw, err)
		}
		p.prefix = pfx
		return p, nil
	}
	if bracketed {
		return Pattern{}, fmt.Errorf("%q: only an IPv6 address or block goes in brackets", raw)
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		p.wildcard = true
		host = rest
	}
	if strings.Contains(host, "*") {
		return Pattern{}, fmt.Errorf("%q: a wildcard is only allowed as the whole first label, as in *.example.com", raw)
	}
	name, err := normalizeName(host)
	if err != nil {
		return Pattern{}, fmt.Errorf("%q: %w", raw, err)
	}
	if p.wildcard && !strings.Contains(name, ".") {
		return Pattern{}, fmt.Errorf("%q would allow every name under the top-level domain %q: name a domain, as in *.example.com", raw, name)
	}
	p.name = name
	return p, nil
}

// splitPattern splits host[:port]. A host with more than one colon and no
// brackets is an IPv6 address or block without a port.
func splitPattern(s string) (host, port string, hasPort bool, err error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", false, errors.New("missing ]")
		}
		host, rest := s[1:end], s[end+1:]
		if rest == "" {
			return host, "", false, nil
		}
		if !strings.HasPrefix(rest, ":") {
			return "", "", false, fmt.Errorf("unexpected %q after ]", rest)
		}
		return host, rest[1:], true, nil
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, "", false, nil
	case 1:
		i := strings.IndexByte(s, ':')
		return s[:i], s[i+1:], true, nil
	default:
		return s, "", false, nil
	}
}

// parsePort reads a decimal port 1-65535.
func parsePort(s string) (uint16, error) {
	if s == "" {
		return 0, errors.New("empty port: write a number 1-65535 or *")
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("port %q is not a number 1-65535 or *", s)
		}
	}
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("port %q is not a number 1-65535 or *", s)
	}
	return uint16(n), nil
}

// parseIPHost reads an IP address or CIDR block. ok reports whether host
// is meant as one (it has a slash, or parses as an address); err then says
// what is wrong with it.
func parseIPHost(host string) (pfx netip.Prefix, ok bool, err error) {
	if strings.Contains(host, "%") && strings.Contains(host, ":") {
		return netip.Prefix{}, true, errors.New("an address with a zone (%) cannot be allowed: name the address without it")
	}
	if strings.Contains(host, "/") {
		p, err := netip.ParsePrefix(host)
		if err != nil {
			hint := ""
			if strings.Count(host, ":") > 1 {
				hint = " (an IPv6 block with a port goes in brackets: [2001:db8::/32]:443)"
			}
			return netip.Prefix{}, true, fmt.Errorf("%q is not a CIDR block such as 203.0.113.0/24 or 2001:db8::/32%s", host, hint)
		}
		if p != p.Masked() {
			return netip.Prefix{}, true, fmt.Errorf("%q has bits set past its /%d: write %s", host, p.Bits(), p.Masked())
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		if p.Bits() == 0 {
			return netip.Prefix{}, true, fmt.Errorf("%q would allow every address: name the blocks the server needs", host)
		}
		if err := checkNeverPrefix(p); err != nil {
			return netip.Prefix{}, true, err
		}
		return p, true, nil
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}, false, nil
	}
	a = a.Unmap()
	p := netip.PrefixFrom(a, a.BitLen())
	if err := checkNeverPrefix(p); err != nil {
		return netip.Prefix{}, true, err
	}
	return p, true, nil
}

// checkNeverPrefix refuses a block that lies wholly inside addresses the
// proxy never connects to.
func checkNeverPrefix(p netip.Prefix) error {
	for _, b := range addrBlocks {
		if b.class == classNever && b.prefix.Addr().Is4() == p.Addr().Is4() &&
			b.prefix.Bits() <= p.Bits() && b.prefix.Contains(p.Addr()) {
			return fmt.Errorf("%s is %s: the proxy never connects there", p, b.what)
		}
	}
	return nil
}

// normalizeName lower-cases a host name, drops one trailing dot and checks
// it: ASCII letters, digits, '-' and '_' in dot-separated labels of 1-63
// characters, 253 in all, and a last label that is not all digits (which
// resolvers may read as an address).
func normalizeName(s string) (string, error) {
	s = strings.TrimSuffix(s, ".")
	if s == "" {
		return "", errors.New("empty host name")
	}
	if len(s) > 253 {
		return "", fmt.Errorf("host name is %d characters, over 253", len(s))
	}
	s = strings.ToLower(s)
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" {
			return "", fmt.Errorf("host name %q has an empty label", s)
		}
		if len(l) > 63 {
			return "", fmt.Errorf("host name %q has a label over 63 characters", s)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			switch {
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
			case c >= 0x80:
				return "", fmt.Errorf("host name %q is not ASCII: write its xn-- (punycode) form", s)
			default:
				return "", fmt.Errorf("host name %q has the character %q", s, c)
			}
		}
	}
	last := labels[len(labels)-1]
	if strings.Trim(last, "0123456789") == "" {
		return "", fmt.Errorf("%q is neither a host name (its last label is a number) nor an IP address", s)
	}
	return s, nil
}

// String is the pattern in the form ParsePattern reads back.
func (p Pattern) String() string {
	var host string
	switch {
	case p.prefix.IsValid():
		if p.prefix.IsSingleIP() {
			host = p.prefix.Addr().String()
		} else {
			host = p.prefix.String()
		}
		if p.prefix.Addr().Is6() && (p.anyPort || p.port != 0) {
			host = "[" + host + "]"
		}
	case p.wildcard:
		host = "*." + p.name
	default:
		host = p.name
	}
	switch {
	case p.anyPort:
		return host + ":*"
	case p.port != 0:
		return host + ":" + strconv.Itoa(int(p.port))
	}
	return host
}

// IsIP reports whether p is an IP address or CIDR block pattern.
func (p Pattern) IsIP() bool { return p.prefix.IsValid() }

// allowsPort reports whether p allows port.
func (p Pattern) allowsPort(port uint16) bool {
	switch {
	case p.anyPort:
		return true
	case p.port != 0:
		return p.port == port
	}
	return port == 80 || port == 443
}

// matchName reports whether p is a host-name pattern that allows the
// normalized name on port.
func (p Pattern) matchName(name string, port uint16) bool {
	if p.prefix.IsValid() || !p.allowsPort(port) {
		return false
	}
	if p.wildcard {
		return len(name) > len(p.name)+1 && strings.HasSuffix(name, p.name) && name[len(name)-len(p.name)-1] == '.'
	}
	return name == p.name
}

// Allowlist is the parsed set of destinations a sandboxed server may
// reach. The nil or empty Allowlist allows nothing.
type Allowlist struct {
	patterns []Pattern
}

// ParseAllowlist parses entries with [ParsePattern]. Every bad entry is
// reported, each error naming the entry and its position.
func ParseAllowlist(entries []string) (*Allowlist, error) {
	a := &Allowlist{}
	var errs []error
	seen := map[string]bool{}
	for i, e := range entries {
		p, err := ParsePattern(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("egress allow entry %d: %w", i+1, err))
			continue
		}
		if s := p.String(); !seen[s] {
			seen[s] = true
			a.patterns = append(a.patterns, p)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return a, nil
}

// Patterns returns the allowlist's patterns, duplicates dropped.
func (a *Allowlist) Patterns() []Pattern {
	if a == nil {
		return nil
	}
	return append([]Pattern(nil), a.patterns...)
}

// String is the allowlist as comma-separated patterns.
func (a *Allowlist) String() string {
	var b strings.Builder
	for i, p := range a.Patterns() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// allowsName reports whether a host-name pattern allows the normalized
// name on port. It is checked before the name is resolved, so a name
// outside the allowlist never reaches DNS.
func (a *Allowlist) allowsName(name string, port uint16) bool {
	if a == nil {
		return false
	}
	for _, p := range a.patterns {
		if p.matchName(name, port) {
			return true
		}
	}
	return false
}

// namesAddr reports whether an IP pattern allows addr on port. A pattern
// reaches an address in a non-public block (loopback, private, link-local
// ...) only when the pattern lies inside that block: 10.0.0.0/8 or
// 10.1.2.3 reach 10.1.2.3, but 0.0.0.0/1 does not reach 10.1.2.3 nor
// 127.0.0.1.
func (a *Allowlist) namesAddr(addr netip.Addr, port uint16) bool {
	if a == nil {
		return false
	}
	addr = addr.Unmap().WithZone("")
	b := classify(addr)
	for _, p := range a.patterns {
		if !p.prefix.IsValid() || !p.allowsPort(port) || !p.prefix.Contains(addr) {
			continue
		}
		if b.class == classPublic ||
			(b.prefix.Bits() <= p.prefix.Bits() && b.prefix.Contains(p.prefix.Addr())) {
			return true
		}
	}
	return false
}

// addrClass says how the proxy treats an address.
type addrClass int

const (
	// classPublic: reachable through an allowed host name.
	classPublic addrClass = iota
	// classInternal: reachable only when an IP pattern inside its block names it.
	classInternal
	// classNever: never reachable.
	classNever
)

type addrBlock struct {
	prefix netip.Prefix
	class  addrClass
	what   string
}

// addrBlocks are the non-public blocks, checked in order (the first that
// contains an address classifies it).
var addrBlocks = func() []addrBlock {
	b := func(s string, c addrClass, what string) addrBlock {
		return addrBlock{netip.MustParsePrefix(s), c, what}
	}
	return []addrBlock{
		b("0.0.0.0/8", classNever, `"this network" (0.0.0.0/8, which reaches this host)`),
		b("224.0.0.0/4", classNever, "multicast"),
		b("255.255.255.255/32", classNever, "the broadcast address"),
		b("127.0.0.0/8", classInternal, "loopback"),
		b("169.254.0.0/16", classInternal, "link-local"),
		b("10.0.0.0/8", classInternal, "private"),
		b("172.16.0.0/12", classInternal, "private"),
		b("192.168.0.0/16", classInternal, "private"),
		b("100.64.0.0/10", classInternal, "shared address space (carrier-grade NAT)"),
		b("192.0.0.0/24", classInternal, "IETF protocol assignments"),
		b("192.0.2.0/24", classInternal, "documentation"),
		b("198.51.100.0/24", classInternal, "documentation"),
		b("203.0.113.0/24", classInternal, "documentation"),
		b("198.18.0.0/15", classInternal, "benchmarking"),
		b("240.0.0.0/4", classInternal, "reserved"),
		b("::1/128", classInternal, "loopback"),
		b("::/128", classNever, "the unspecified address"),
		b("::/96", classNever, "IPv4-compatible (deprecated)"),
		b("ff00::/8", classNever, "multicast"),
		b("fe80::/10", classInternal, "link-local"),
		b("fec0::/10", classInternal, "site-local (deprecated)"),
		b("fc00::/7", classInternal, "unique local (private)"),
		b("64:ff9b:1::/48", classInternal, "local-use NAT64"),
		b("100::/64", classInternal, "discard-only"),
		b("2001:db8::/32", classInternal, "documentation"),
	}
}()

var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// classify returns the block addr falls in; a public address gets
// classPublic and the address's own /32 or /128. IPv4-mapped addresses
// are classified as their IPv4 address, and NAT64 and 6to4 addresses
// that embed a non-public IPv4 address are never reachable.
func classify(addr netip.Addr) addrBlock {
	addr = addr.Unmap().WithZone("")
	for _, b := range addrBlocks {
		if b.prefix.Contains(addr) {
			return b
		}
	}
	if addr.Is6() {
		var embedded netip.Addr
		a16 := addr.As16()
		switch {
		case nat64Prefix.Contains(addr):
			embedded = netip.AddrFrom4([4]byte(a16[12:16]))
		case sixToFour.Contains(addr):
			embedded = netip.AddrFrom4([4]byte(a16[2:6]))
		}
		if embedded.IsValid() {
			if e := classify(embedded); e.class != classPublic {
				return addrBlock{netip.PrefixFrom(addr, 128), classNever, "an IPv6 address embedding the " + e.what + " address " + embedded.String()}
			}
		}
	}
	return addrBlock{netip.PrefixFrom(addr, addr.BitLen()), classPublic, "public"}
}
