package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for the zero fields of [Config].
const (
	DefaultDialTimeout      = 10 * time.Second
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultIdleTimeout      = 5 * time.Minute
	DefaultMaxConns         = 128
	DefaultMaxHeaderBytes   = 32 << 10
)

// maxDialAddrs bounds how many of a name's allowed addresses are tried.
const maxDialAddrs = 4

// ErrClosed is returned by [Proxy.Serve] once [Proxy.Close] was called.
var ErrClosed = errors.New("egress: proxy closed")

// Resolver looks up a host name's addresses. *net.Resolver satisfies it;
// tests substitute their own.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config configures a [Proxy]. Zero durations and sizes take the
// Default* constants.
type Config struct {
	// Allow is the destinations the proxy connects to; nil allows none.
	Allow *Allowlist
	// Resolver resolves allowed host names; nil is net.DefaultResolver.
	Resolver Resolver
	// Logger gets one record per connection (Info when allowed, Warn
	// otherwise); nil logs nothing.
	Logger *slog.Logger
	// OnConn, when set, is called with every connection's [Event] once it
	// ends (for plain HTTP, once per forwarded request). It runs on the
	// connection's goroutine (the accept loop's, for a connection refused
	// over MaxConns): it must not block for long, and must not call
	// [Proxy.Close].
	OnConn func(Event)
	// DenyPorts are ports never reached on this host's own addresses
	// (loopback, unspecified, and the addresses of its interfaces), even
	// where an IP pattern names the address: junction's own listeners.
	// The ports of TCP listeners passed to [Proxy.Serve] are added.
	DenyPorts []uint16
	// DialTimeout bounds resolving and connecting to one destination.
	DialTimeout time.Duration
	// HandshakeTimeout bounds the SOCKS5 handshake or the HTTP request
	// line and headers, counted from the connection's start (for a later
	// request on a keep-alive connection, from its first byte).
	HandshakeTimeout time.Duration
	// IdleTimeout ends a tunnel or keep-alive connection when no byte has
	// moved in either direction for this long, and a write that makes no
	// progress for this long.
	IdleTimeout time.Duration
	// MaxConns bounds the client connections served at once; more are
	// closed as soon as they are accepted.
	MaxConns int
	// MaxHeaderBytes bounds an HTTP request's line and headers (with up to
	// 4 KiB of slack); more gets 431.
	MaxHeaderBytes int
}

// Outcome says how a connection ended.
type Outcome string

const (
	// OutcomeAllowed: the destination was allowed and connected.
	OutcomeAllowed Outcome = "allowed"
	// OutcomeDenied: the policy refused the destination.
	OutcomeDenied Outcome = "denied"
	// OutcomeFailed: the destination was allowed but could not be
	// resolved or connected.
	OutcomeFailed Outcome = "failed"
	// OutcomeInvalid: the client spoke no valid request (malformed,
	// unsupported, too large, or too slow).
	OutcomeInvalid Outcome = "invalid"
	// OutcomeRejected: over MaxConns, or the proxy was closing.
	OutcomeRejected Outcome = "rejected"
)

// Event records one connection (for plain HTTP forwarding, one request).
type Event struct {
	Start    time.Time
	Duration time.Duration
	// Proto is "socks5", "connect" (HTTP CONNECT), "http" (a forwarded
	// plain HTTP request) or "" (not known: the handshake failed early).
	Proto string
	// Client is the client's address as the listener reports it (empty
	// for an unnamed unix socket peer).
	Client string
	// Host and Port are the destination as requested (a host name or an
	// IP address); Host is empty when none was read.
	Host string
	Port uint16
	// Addr is the IP address and port connected, or tried last.
	Addr    string
	Outcome Outcome
	// Reason says why a connection was denied, failed or invalid, or how
	// an allowed one ended when not cleanly.
	Reason string
	// Up is bytes from the client to the destination, Down the reverse.
	Up, Down int64
}

// Stats are a proxy's counters since [New].
type Stats struct {
	Accepted                                   uint64
	Allowed, Denied, Failed, Invalid, Rejected uint64
	Active                                     int64
	BytesUp, BytesDown                         uint64
}

// Proxy is an egress proxy that serves HTTP (CONNECT and absolute-URI
// plain HTTP) and SOCKS5 (CONNECT) on the same listeners, and connects
// only to destinations its allowlist allows. See the package comment.
type Proxy struct {
	cfg      Config
	resolver Resolver
	log      *slog.Logger
	ctx      context.Context
	cancel   context.CancelFunc

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[net.Conn]struct{}
	active    int
	selfPorts map[uint16]struct{}
	wg        sync.WaitGroup

	accepted, allowed, denied, failed, invalid, rejected atomic.Uint64
	bytesUp, bytesDown                                   atomic.Uint64
	activeN                                              atomic.Int64
}

// New returns a proxy for cfg; it serves nothing until [Proxy.Serve].
func New(cfg Config) *Proxy {
	orDefault(&cfg.DialTimeout, DefaultDialTimeout)
	orDefault(&cfg.HandshakeTimeout, DefaultHandshakeTimeout)
	orDefault(&cfg.IdleTimeout, DefaultIdleTimeout)
	orDefault(&cfg.MaxConns, DefaultMaxConns)
	orDefault(&cfg.MaxHeaderBytes, DefaultMaxHeaderBytes)
	p := &Proxy{
		cfg:       cfg,
		resolver:  cfg.Resolver,
		log:       cfg.Logger,
		listeners: map[net.Listener]struct{}{},
		conns:     map[net.Conn]struct{}{},
		selfPorts: map[uint16]struct{}{},
	}
	if p.resolver == nil {
		p.resolver = net.DefaultResolver
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	for _, port := range cfg.DenyPorts {
		p.selfPorts[port] = struct{}{}
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p
}

func orDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Stats returns the proxy's counters.
func (p *Proxy) Stats() Stats {
	return Stats{
		Accepted: p.accepted.Load(),
		Allowed:  p.allowed.Load(),
		Denied:   p.denied.Load(),
		Failed:   p.failed.Load(),
		Invalid:  p.invalid.Load(),
		Rejected: p.rejected.Load(),
		Active:   p.activeN.Load(),
		BytesUp:  p.bytesUp.Load(), BytesDown: p.bytesDown.Load(),
	}
}

// Serve accepts connections on l until l fails or [Proxy.Close] is
// called, then closes l. After Close it returns [ErrClosed]. Serve may be
// called for several listeners at once. When l is a TCP listener its
// port joins the denied ports, so the proxy never connects to itself.
func (p *Proxy) Serve(l net.Listener) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		l.Close()
		return ErrClosed
	}
	p.listeners[l] = struct{}{}
	if ta, ok := l.Addr().(*net.TCPAddr); ok {
		p.selfPorts[uint16(ta.Port)] = struct{}{}
	}
	p.wg.Add(1)
	p.mu.Unlock()
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		delete(p.listeners, l)
		p.mu.Unlock()
		l.Close()
	}()

	var backoff time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if p.isClosed() {
				return ErrClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) || isTemporary(err) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				t := time.NewTimer(backoff)
				select {
				case <-t.C:
				case <-p.ctx.Done():
					t.Stop()
					return ErrClosed
				}
				continue
			}
			return err
		}
		backoff = 0
		p.accepted.Add(1)
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			return ErrClosed
		}
		if p.active >= p.cfg.MaxConns {
			p.mu.Unlock()
			c.Close()
			now := time.Now()
			p.emit(Event{Start: now, Client: addrString(c.RemoteAddr()), Outcome: OutcomeRejected,
				Reason: fmt.Sprintf("over %d connections at once", p.cfg.MaxConns)})
			continue
		}
		p.active++
		p.conns[c] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		p.activeN.Add(1)
		go p.handle(c)
	}
}

// isTemporary reports accept errors worth retrying: out of file
// descriptors or memory, or an aborted connection.
func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

func (p *Proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// Close stops every Serve, closes every client connection and tunnel,
// and returns once all the proxy's goroutines have exited.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		for l := range p.listeners {
			l.Close()
		}
		for c := range p.conns {
			c.Close()
		}
	}
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
	return nil
}

// track registers an upstream connection for Close; false when closing
// (c is then closed).
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// handle serves one client connection.
func (p *Proxy) handle(c net.Conn) {
	defer func() {
		p.untrack(c)
		p.mu.Lock()
		p.active--
		p.mu.Unlock()
		p.activeN.Add(-1)
		p.wg.Done()
	}()
	start := time.Now()
	client := addrString(c.RemoteAddr())
	c.SetDeadline(start.Add(p.cfg.HandshakeTimeout))
	lr := &limitReader{r: c}
	lr.limit(p.cfg.MaxHeaderBytes + readBufSize)
	br := bufio.NewReaderSize(lr, readBufSize)
	first, err := br.Peek(1)
	if err != nil {
		p.emit(Event{Start: start, Client: client, Outcome: OutcomeInvalid, Reason: "no request: " + errText(err)})
		return
	}
	switch first[0] {
	case socksVersion:
		p.serveSOCKS(c, br, lr, start, client)
	case 4:
		p.emit(Event{Start: start, Client: client, Proto: "socks4", Outcome: OutcomeInvalid, Reason: "SOCKS4 is not supported: use SOCKS5"})
	default:
		p.serveHTTP(c, br, lr, start, client)
	}
}

const readBufSize = 4 << 10

// emit counts, logs and reports ev.
func (p *Proxy) emit(ev Event) {
	if ev.Duration == 0 && !ev.Start.IsZero() {
		ev.Duration = time.Since(ev.Start)
	}
	switch ev.Outcome {
	case OutcomeAllowed:
		p.allowed.Add(1)
	case OutcomeDenied:
		p.denied.Add(1)
	case OutcomeFailed:
		p.failed.Add(1)
	case OutcomeInvalid:
		p.invalid.Add(1)
	case OutcomeRejected:
		p.rejected.Add(1)
	}
	p.bytesUp.Add(uint64(max(ev.Up, 0)))
	p.bytesDown.Add(uint64(max(ev.Down, 0)))
	level := slog.LevelInfo
	if ev.Outcome != OutcomeAllowed {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{
		slog.String("outcome", string(ev.Outcome)),
		slog.String("proto", ev.Proto),
		slog.String("client", ev.Client),
	}
	if ev.Host != "" {
		attrs = append(attrs, slog.String("host", ev.Host), slog.Int("port", int(ev.Port)))
	}
	if ev.Addr != "" {
		attrs = append(attrs, slog.String("addr", ev.Addr))
	}
	if ev.Reason != "" {
		attrs = append(attrs, slog.String("reason", ev.Reason))
	}
	attrs = append(attrs, slog.Int64("up", ev.Up), slog.Int64("down", ev.Down), slog.Duration("duration", ev.Duration))
	p.log.LogAttrs(context.Background(), level, "egress", attrs...)
	if p.cfg.OnConn != nil {
		p.cfg.OnConn(ev)
	}
}

// target is a requested destination: a normalized host name, or an IP
// address (unmapped) when ip is valid.
type target struct {
	host string
	ip   netip.Addr
	port uint16
}

func (t target) String() string {
	return net.JoinHostPort(t.host, strconv.Itoa(int(t.port)))
}

// parseHost reads a requested host: an IP address (no zone) or a host
// name, which is normalized.
func parseHost(h string, port uint16) (target, error) {
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return target{}, fmt.Errorf("address %q has a zone", h)
		}
		a = a.Unmap()
		return target{host: a.String(), ip: a, port: port}, nil
	}
	name, err := normalizeName(h)
	if err != nil {
		return target{}, err
	}
	return target{host: name, port: port}, nil
}

// denial is a policy refusal; other dial errors are failures.
type denial struct{ reason string }

func (d *denial) Error() string { return d.reason }

// addrAllowed applies the address rules to one address: never-reachable
// blocks, the denied ports on this host's addresses, and IP patterns.
// literal is true when the client asked for the address itself rather
// than a name the allowlist allowed.
func (p *Proxy) addrAllowed(a netip.Addr, port uint16, literal bool) error {
	a = a.Unmap().WithZone("")
	b := classify(a)
	if b.class == classNever {
		return &denial{fmt.Sprintf("%s is %s: never reached", a, b.what)}
	}
	if p.isDeniedPort(port) && isLocalAddr(a) {
		return &denial{fmt.Sprintf("%s port %d is one of junction's own on this host: never reached", a, port)}
	}
	if p.cfg.Allow.namesAddr(a, port) {
		return nil
	}
	if literal {
		return &denial{fmt.Sprintf("%s port %d is not in the allowlist", a, port)}
	}
	if b.class != classPublic {
		return &denial{fmt.Sprintf("resolves to %s, a %s address the allowlist does not name", a, b.what)}
	}
	return nil
}

func (p *Proxy) isDeniedPort(port uint16) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.selfPorts[port]
	return ok
}

// interfaceAddrs lists this host's addresses; a variable for tests.
var interfaceAddrs = net.InterfaceAddrs

// isLocalAddr reports whether a is loopback, unspecified, or one of this
// host's interface addresses.
func isLocalAddr(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLoopback() || a.IsUnspecified() {
		return true
	}
	addrs, err := interfaceAddrs()
	if err != nil {
		return true // unknown: treat as local, so the denied ports stay denied
	}
	for _, ia := range addrs {
		var ip net.IP
		switch v := ia.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if x, ok := netip.AddrFromSlice(ip); ok && x.Unmap() == a {
			return true
		}
	}
	return false
}

// connect checks t against the policy, resolves it when it is a name
// (only once the name is allowed, so a refused name never reaches DNS),
// checks every address, and connects to an allowed address, never the
// name again. The returned addr is the address connected or last tried.
// A policy refusal is a *denial.
func (p *Proxy) connect(t target) (c net.Conn, addr string, err error) {
	var candidates []netip.Addr
	if t.ip.IsValid() {
		if err := p.addrAllowed(t.ip, t.port, true); err != nil {
			return nil, "", err
		}
		candidates = []netip.Addr{t.ip}
	} else {
		if !p.cfg.Allow.allowsName(t.host, t.port) {
			return nil, "", &denial{fmt.Sprintf("%s is not in the allowlist", t)}
		}
		ctx, cancel := context.WithTimeout(p.ctx, p.cfg.DialTimeout)
		addrs, err := p.resolver.LookupNetIP(ctx, "ip", t.host)
		cancel()
		if err != nil {
			return nil, "", fmt.Errorf("resolve %s: %w", t.host, err)
		}
		var firstDenial error
		seen := map[netip.Addr]bool{}
		for _, a := range addrs {
			a = a.Unmap().WithZone("")
			if seen[a] {
				continue
			}
			seen[a] = true
			if err := p.addrAllowed(a, t.port, false); err != nil {
				if firstDenial == nil {
					firstDenial = err
				}
				continue
			}
			candidates = append(candidates, a)
		}
		if len(candidates) == 0 {
			if firstDenial == nil {
				firstDenial = fmt.Errorf("resolve %s: no addresses", t.host)
			}
			return nil, "", firstDenial
		}
		if len(candidates) > maxDialAddrs {
			candidates = candidates[:maxDialAddrs]
		}
	}
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.DialTimeout)
	defer cancel()
	var d net.Dialer
	for _, a := range candidates {
		addr = netip.AddrPortFrom(a, t.port).String()
		c, err = d.DialContext(ctx, "tcp", addr)
		if err == nil {
			if !p.track(c) {
				return nil, addr, ErrClosed
			}
			return c, addr, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, addr, err
}

// limitReader reads from r, failing with errHeaderTooLarge once more than
// the limit set by limit has been read; unlimited after unlimit.
type limitReader struct {
	r        io.Reader
	n        int
	limited  bool
	exceeded bool
}

var errHeaderTooLarge = errors.New("request header too large")

func (l *limitReader) limit(n int) { l.n, l.limited, l.exceeded = n, true, false }
func (l *limitReader) unlimit()    { l.limited = false }

func (l *limitReader) Read(b []byte) (int, error) {
	if !l.limited {
		return l.r.Read(b)
	}
	if l.n <= 0 {
		l.exceeded = true
		return 0, errHeaderTooLarge
	}
	if len(b) > l.n {
		b = b[:l.n]
	}
	n, err := l.r.Read(b)
	l.n -= n
	return n, err
}

// splice copies between client and upstream both ways until both
// directions end, and returns the bytes moved up and down and the first
// error (nil for a clean end). A direction that ends cleanly half-closes
// its destination; one that fails closes both connections. The tunnel
// ends when no byte has moved either way for IdleTimeout, or a write
// makes no progress for that long.
func (p *Proxy) splice(client, upstream net.Conn) (up, down int64, err error) {
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	var mu sync.Mutex
	var first error // the error that ended the tunnel, not the ones it caused
	end := func(dst, src net.Conn, err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		endDirection(dst, src, err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var err error
		up, err = p.copyIdle(upstream, client, &last)
		end(upstream, client, err)
	}()
	var errDown error
	down, errDown = p.copyIdle(client, upstream, &last)
	end(client, upstream, errDown)
	wg.Wait()
	return up, down, first
}

// endDirection half-closes dst after a clean end of src, or closes both
// after an error (or where dst cannot half-close).
func endDirection(dst, src net.Conn, err error) {
	if err == nil {
		if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
			return
		}
	}
	dst.Close()
	src.Close()
}

// copyIdle copies src to dst until src's EOF, with the shared idle clock.
func (p *Proxy) copyIdle(dst, src net.Conn, last *atomic.Int64) (int64, error) {
	idle := p.cfg.IdleTimeout
	buf := make([]byte, 32<<10)
	var total int64
	for {
		src.SetReadDeadline(time.Unix(0, last.Load()).Add(idle))
		nr, rerr := src.Read(buf)
		if nr > 0 {
			last.Store(time.Now().UnixNano())
			dst.SetWriteDeadline(time.Now().Add(idle))
			nw, werr := dst.Write(buf[:nr])
			total += int64(nw)
			if werr != nil {
				return total, werr
			}
			last.Store(time.Now().UnixNano())
		}
		if rerr != nil {
			if errors.Is(rerr, os.ErrDeadlineExceeded) && time.Since(time.Unix(0, last.Load())) < idle {
				continue // the other direction moved: not idle
			}
			if rerr == io.EOF {
				return total, nil
			}
			if errors.Is(rerr, os.ErrDeadlineExceeded) {
				return total, fmt.Errorf("idle for %s", idle)
			}
			return total, rerr
		}
	}
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// errText is a short description of a handshake read error.
func errText(err error) string {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "handshake timed out"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "client closed the connection"
	case errors.Is(err, net.ErrClosed):
		return "proxy closed"
	}
	return err.Error()
}
