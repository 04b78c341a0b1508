package statuspage

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/httpguard"
)

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// limitedAuth returns an Auth on a fake clock, logging to the buffer.
func limitedAuth(token string) (*Auth, *fakeClock, *syncBuffer) {
	a := NewAuth(httpguard.NewTokens(token))
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	a.now = clock.Now
	logs := &syncBuffer{}
	a.Logger = slog.New(slog.NewTextHandler(logs, nil))
	return a, clock, logs
}

// loginFrom posts the form with token from the remote address.
func loginFrom(a *Auth, remote, token string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "http://127.0.0.1:7331/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Origin", "http://127.0.0.1:7331")
	r.RemoteAddr = remote
	rec := httptest.NewRecorder()
	a.Login(rec, r)
	return rec
}

func TestLoginRateLimit(t *testing.T) {
	const token = "s3cret-token-value"
	a, clock, logs := limitedAuth(token)
	const guesser = "198.51.100.7:40000"

	for i := range LoginBurst {
		if rec := loginFrom(a, guesser, fmt.Sprintf("guess-%d", i)); rec.Code != http.StatusUnauthorized {
			t.Fatalf("wrong login %d of the burst = %d, want 401", i+1, rec.Code)
		}
	}
	// Past the burst: 429, for a good token too (its token is not even
	// looked at), with the time to wait.
	for _, tok := range []string{"guess-more", token} {
		rec := loginFrom(a, guesser, tok)
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" {
			t.Errorf("login past the burst = %d, Retry-After %q; want 429, 1", rec.Code, rec.Header().Get("Retry-After"))
		}
		if len(rec.Result().Cookies()) > 0 {
			t.Errorf("a refused login set cookies %v", rec.Result().Cookies())
		}
	}
	// Another address (another port of the same host is the same
	// address) is not held back by this one.
	if rec := loginFrom(a, "198.51.100.7:40001", "guess"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("another port of the same address = %d, want 429", rec.Code)
	}
	if rec := loginFrom(a, "203.0.113.9:5000", token); rec.Code != http.StatusSeeOther {
		t.Errorf("good login from another address = %d, want 303", rec.Code)
	}

	// After waiting as told, the good token gets in.
	clock.Add(time.Second)
	if rec := loginFrom(a, guesser, token); rec.Code != http.StatusSeeOther {
		t.Fatalf("good login after waiting = %d, want 303", rec.Code)
	}
	// A good login gives its token back: the address may fail once more.
	if rec := loginFrom(a, guesser, "guess-again"); rec.Code != http.StatusUnauthorized {
		t.Errorf("wrong login after the good one = %d, want 401", rec.Code)
	}

	log := logs.String()
	if n := strings.Count(log, "status page login failed"); n != LoginBurst+1 {
		t.Errorf("%d failed-login warnings, want %d (one per failure):\n%s", n, LoginBurst+1, log)
	}
	if !strings.Contains(log, "level=WARN") || !strings.Contains(log, "remote=198.51.100.7:40000") {
		t.Errorf("the failed-login warnings do not name the remote address at WARN:\n%s", log)
	}
	if strings.Contains(log, "guess") || strings.Contains(log, token) {
		t.Errorf("the log shows a presented token:\n%s", log)
	}
}

// TestLoginRateLimitFlood: guesses spread over many addresses meet the
// global limit, and a flood of refused logins makes one warning per
// interval, not one per login.
func TestLoginRateLimitFlood(t *testing.T) {
	const token = "s3cret-token-value"
	a, clock, logs := limitedAuth(token)
	codes := map[int]int{}
	for i := range 1000 {
		codes[loginFrom(a, fmt.Sprintf("192.0.2.%d:1000", i%250), "guess").Code]++
	}
	if codes[http.StatusUnauthorized] != GlobalLoginBurst || codes[http.StatusTooManyRequests] != 1000-GlobalLoginBurst {
		t.Errorf("1000 wrong logins from 250 addresses at once: %v; want %d answered 401 and the rest 429", codes, GlobalLoginBurst)
	}
	log := logs.String()
	if n := strings.Count(log, "status page logins refused"); n != 1 {
		t.Errorf("%d warnings about refused logins, want 1:\n%s", n, log)
	}
	// Once the interval has passed, the next refusal sums up the ones
	// not logged.
	clock.Add(refusedLogEvery)
	for i := 0; i < 100 && loginFrom(a, "198.51.100.1:1000", "guess").Code != http.StatusTooManyRequests; i++ {
	}
	if got := strings.Count(logs.String(), "status page logins refused"); got != 2 || !strings.Contains(logs.String(), fmt.Sprintf("refused=%d", 1000-GlobalLoginBurst)) {
		t.Errorf("after %v: %d warnings about refused logins, want 2, the second counting the ones since the first:\n%s", refusedLogEvery, got, logs.String())
	}
}

func TestLimitKey(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"198.51.100.7:4000", "198.51.100.7/32"},
		{"[2001:db8:1:2:3:4:5:6]:4000", "2001:db8:1:2::/64"},
		{"[::ffff:198.51.100.7]:4000", "198.51.100.7/32"},
		{"@", "invalid Prefix"},
	} {
		if got := limitKey(tc.in).String(); got != tc.want {
			t.Errorf("limitKey(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestLimitedAddrsBounded(t *testing.T) {
	l := newLoginLimiter()
	now := time.Now()
	for i := range maxLimitedAddrs + 10 {
		l.take(now, limitKey(fmt.Sprintf("10.%d.%d.1:1", i/256, i%256)))
		now = now.Add(time.Second) // keeps the global bucket from running dry
	}
	if len(l.addrs) > maxLimitedAddrs {
		t.Errorf("%d addresses kept, want at most %d", len(l.addrs), maxLimitedAddrs)
	}
}
