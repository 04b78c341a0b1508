// Package egress is the proxy through which a sandboxed stdio MCP server
// reaches the network destinations an operator allows, and nothing else.
//
// # Threat model
//
// junction runs a stdio server in a sandbox with no network of its own:
// no interfaces but loopback, and no resolver. Where the operator allows
// some destinations, the sandbox forwards one TCP port inside its network
// namespace to a unix socket on which junction serves a [Proxy], and the
// server is told to use it (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY). The
// server is assumed hostile: it controls every byte it sends the proxy,
// and may control DNS for names the allowlist allows. It will try to
//
//   - reach junction itself (the hub's HTTP port, its admin or metrics
//     listeners), other services on the host (databases, the Docker
//     socket's TCP twin, a cloud metadata endpoint at 169.254.169.254),
//     or the private network;
//   - get there through an allowed name, by making it resolve to
//     127.0.0.1, ::ffff:127.0.0.1, 10.0.0.5 or the like (DNS rebinding);
//   - exfiltrate data through DNS, by asking for
//     <secret>.attacker.example;
//   - exhaust the hub: many connections, slow or endless handshakes,
//     huge headers, idle tunnels.
//
// The defences:
//
//   - The proxy resolves names itself, and only names the allowlist
//     allows: a refused name is never looked up, so the sandbox needs no
//     resolver and DNS carries nothing out. SOCKS5 clients must send the
//     name (socks5h://; a client that resolves locally has no resolver
//     and fails closed).
//   - Every resolved address is checked again, and the proxy connects to
//     that checked address, never to the name a second time. Loopback,
//     link-local, private (10/8, 172.16/12, 192.168/16, 100.64/10,
//     fc00::/7) and other non-public addresses, IPv4-mapped forms
//     included, are refused for a name unless an IP or CIDR pattern of
//     the allowlist names them, from inside their block (127.0.0.1 or
//     10.0.0.0/8 do; 0.0.0.0/1 does not). Unspecified, multicast,
//     broadcast and 0.0.0.0/8 addresses are never reached.
//   - A request for an IP address is allowed only when an IP or CIDR
//     pattern names it: a host-name pattern never matches an address.
//   - Ports: a pattern without a port allows 80 and 443 only. The ports in
//     [Config.DenyPorts] and the proxy's own TCP listener ports are never
//     reached on this host's addresses (loopback, unspecified, its
//     interfaces), even where a pattern names the address.
//   - Only TCP CONNECT is offered: no SOCKS BIND or UDP ASSOCIATE, so no
//     UDP at all (no DNS of the server's own), and no SOCKS4 (whose 4a
//     form could not be told apart from a local lookup).
//   - Bounds: [Config.MaxConns] connections at once, a handshake deadline
//     against slowloris clients, a cap on request header bytes, an idle
//     timeout on tunnels, and a dial timeout. [Proxy.Close] ends every
//     tunnel and returns once every goroutine has exited.
//
// What is left to the operator: an allowed destination can receive
// anything the server sends it, so allowing a host the attacker controls
// (or a shared one: a paste site, a cloud storage domain under a
// wildcard) allows exfiltration there. A wildcard allows every name under
// the domain, including names the domain's owner lets others publish.
//
// # Protocols
//
// One listener serves both: a connection whose first byte is 0x05 is
// SOCKS5, anything else HTTP. HTTP clients use CONNECT (for TLS and any
// other TCP) or send a plain http:// request with an absolute URI, which
// is forwarded (keep-alive, with the policy checked for each request).
// A refused HTTP request gets 403 (a failed connect 502 or 504), with the
// reason in the body and X-Junction-Egress: denied, failed, invalid or
// rejected; a refused SOCKS5 request gets reply 2, "not allowed by
// ruleset".
//
// Every connection (every forwarded plain HTTP request) ends in one
// [Event]: outcome, destination, address connected, bytes each way and
// duration, logged to [Config.Logger], passed to [Config.OnConn] and
// counted in [Proxy.Stats].
//
// The SOCKS5 server is written here rather than taken from
// github.com/armon/go-socks5 (which junction's tests use as a stand-in
// server): that library has no handshake deadline, connection bound, idle
// timeout or graceful Close that ends open tunnels, returns from a tunnel
// while one copy goroutine still runs, reports its own bound address to
// the client, and would need a wrapper for the first-byte protocol
// detection; the CONNECT-only subset needed is about 200 lines.
package egress
