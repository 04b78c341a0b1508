package statuspage

import (
	"math"
	"net"
	"net/netip"
	"sync"
	"time"
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

// bucket is a token bucket: tokens, as of last.
type bucket struct {
	tokens float64
	last   time.Time
}

// fill brings b up to now.
func (b *bucket) fill(now time.Time, rate, burst float64) {
	if d := now.Sub(b.last); d > 0 {
		b.tokens = math.Min(burst, b.tokens+d.Seconds()*rate)
	}
	b.last = now
}

// take takes a token, or says how long until one is there.
func (b *bucket) take(now time.Time, rate, burst float64) (wait time.Duration, ok bool) {
	b.fill(now, rate, burst)
	if b.tokens >= 1 {
		b.tokens--
		return 0, true
	}
	return time.Duration((1 - b.tokens) / rate * float64(time.Second)), false
}

// give puts back a token taken.
func (b *bucket) give(burst float64) { b.tokens = math.Min(burst, b.tokens+1) }

// loginLimiter holds the buckets of failed logins.
type loginLimiter struct {
	mu     sync.Mutex
	global bucket
	addrs  map[netip.Prefix]*bucket
	// refused counts the logins refused since the last warning about
	// them, at lastWarn.
	refused  int
	lastWarn time.Time
}

// newLoginLimiter returns a limiter with every bucket full (a zero
// bucket fills up at its first use).
func newLoginLimiter() *loginLimiter {
	return &loginLimiter{addrs: map[netip.Prefix]*bucket{}}
}

// take takes a token for a login from addr, from both buckets or
// neither; when it cannot, it returns how long until it could.
func (l *loginLimiter) take(now time.Time, addr netip.Prefix) (wait time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.addrs[addr]
	if b == nil {
		l.makeRoom(now)
		b = &bucket{tokens: LoginBurst, last: now}
		l.addrs[addr] = b
	}
	wait, ok = b.take(now, LoginRate, LoginBurst)
	if !ok {
		return wait, false
	}
	if wait, ok = l.global.take(now, GlobalLoginRate, GlobalLoginBurst); !ok {
		b.give(LoginBurst)
		return wait, false
	}
	return 0, true
}

// give puts back the tokens of a login that succeeded.
func (l *loginLimiter) give(addr netip.Prefix) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.addrs[addr]; b != nil {
		b.give(LoginBurst)
	}
	l.global.give(GlobalLoginBurst)
}

// makeRoom drops buckets until there is room for one more: the full ones
// first, then any.
func (l *loginLimiter) makeRoom(now time.Time) {
	if len(l.addrs) < maxLimitedAddrs {
		return
	}
	for k, b := range l.addrs {
		if b.fill(now, LoginRate, LoginBurst); b.tokens >= LoginBurst {
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
