package statuspage

import (
	"math"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limits on failed logins, which [Auth] enforces with token buckets: each
// failed login takes a token from its remote address's bucket and from
// the global one, and a login finding either empty is refused with 429
// and Retry-After before its token is checked. A good login gives its
// tokens back. Guessing a token is thus held to about one try a second
// from an address and five a second from everywhere together, instead of
// thousands.
const (
	// LoginBurst is how many failed logins one address may make at once.
	LoginBurst = 5
	// LoginRate is how many failed logins per second an address gets
	// back, once its burst is spent.
	LoginRate = 1.0
	// GlobalLoginBurst and GlobalLoginRate are the same for all
	// addresses together, so that many addresses do not multiply the
	// rate.
	GlobalLoginBurst = 20
	GlobalLoginRate  = 5.0
	// maxLimitedAddrs bounds the addresses whose buckets are kept; past
	// it, full buckets (which say nothing) are dropped first.
	maxLimitedAddrs = 4096
	// refusedLogEvery is how often, at most, a warning sums up the logins
	// refused by the limits.
	refusedLogEvery = 10 * time.Second
)

// loginLimiter holds the token buckets of failed logins
// (golang.org/x/time/rate).
type loginLimiter struct {
	mu     sync.Mutex
	global *rate.Limiter
	addrs  map[netip.Prefix]*rate.Limiter
	// refused counts the logins refused since the last warning about
	// them, at lastWarn.
	refused  int
	lastWarn time.Time
}

// newLoginLimiter returns a limiter with every bucket full.
func newLoginLimiter() *loginLimiter {
	return &loginLimiter{
		global: rate.NewLimiter(GlobalLoginRate, GlobalLoginBurst),
		addrs:  map[netip.Prefix]*rate.Limiter{},
	}
}

// loginTry is a login's tokens, taken by take.
type loginTry struct{ addr, global *rate.Reservation }

// giveBack puts back the tokens of a login that succeeded.
func (t loginTry) giveBack(now time.Time) {
	t.addr.CancelAt(now)
	t.global.CancelAt(now)
}

// take takes a token for a login from addr, from both buckets or
// neither; when it cannot, it returns how long until it could.
func (l *loginLimiter) take(now time.Time, addr netip.Prefix) (try loginTry, wait time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.addrs[addr]
	if b == nil {
		l.makeRoom(now)
		b = rate.NewLimiter(LoginRate, LoginBurst)
		l.addrs[addr] = b
	}
	try.addr = b.ReserveN(now, 1)
	if wait = try.addr.DelayFrom(now); wait > 0 {
		try.addr.CancelAt(now)
		return loginTry{}, wait, false
	}
	try.global = l.global.ReserveN(now, 1)
	if wait = try.global.DelayFrom(now); wait > 0 {
		try.giveBack(now)
		return loginTry{}, wait, false
	}
	return try, 0, true
}

// makeRoom drops buckets until there is room for one more: the full ones
// first, then any.
func (l *loginLimiter) makeRoom(now time.Time) {
	if len(l.addrs) < maxLimitedAddrs {
		return
	}
	for k, b := range l.addrs {
		if b.TokensAt(now) >= LoginBurst {
			delete(l.addrs, k)
		}
	}
	for k := range l.addrs {
		if len(l.addrs) < maxLimitedAddrs {
			break
		}
		delete(l.addrs, k)
	}
}

// refusal counts a refused login and reports whether to warn about the
// refusals now, and how many there were since the last warning.
func (l *loginLimiter) refusal(now time.Time) (n int, warn bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refused++
	if !l.lastWarn.IsZero() && now.Sub(l.lastWarn) < refusedLogEvery {
		return 0, false
	}
	n, l.refused, l.lastWarn = l.refused, 0, now
	return n, true
}

// limitKey is what failed logins are counted by: the remote address, or
// for IPv6 its /64, which one host usually holds whole. A remote address
// that does not parse (not over TCP) counts as one address.
func limitKey(remoteAddr string) netip.Prefix {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}
	}
	a = a.Unmap().WithZone("")
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// retryAfter is wait in whole seconds, at least 1, for Retry-After.
func retryAfter(wait time.Duration) int {
	return max(1, int(math.Ceil(wait.Seconds())))
}
