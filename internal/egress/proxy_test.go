package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/net/proxy"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitLimit bounds every wait of a test for something that should happen.
const waitLimit = 10 * time.Second

// fakeResolver resolves from a map and records what it was asked.
type fakeResolver struct {
	mu    sync.Mutex
	addrs map[string][]netip.Addr
	asked []string
}

func (r *fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, host)
	if a, ok := r.addrs[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (r *fakeResolver) wasAsked(host string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.asked {
		if h == host {
			return true
		}
	}
	return false
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

// testProxy is a proxy serving on a real listener, with its events.
type testProxy struct {
	*Proxy
	addr     string
	events   chan Event
	resolver *fakeResolver
	served   chan error
}

// startProxy starts a proxy for the allowlist entries on 127.0.0.1 (or on
// l when given). cfg's Allow, Resolver and OnConn are set here.
func startProxy(t *testing.T, allow []string, cfg Config, l net.Listener) *testProxy {
	t.Helper()
	a, err := ParseAllowlist(allow)
	if err != nil {
		t.Fatal(err)
	}
	tp := &testProxy{events: make(chan Event, 256), served: make(chan error, 1)}
	tp.resolver = &fakeResolver{addrs: map[string][]netip.Addr{
		"good.test":      addrs("127.0.0.1"),
		"a.wild.test":    addrs("127.0.0.1"),
		"wild.test":      addrs("127.0.0.1"),
		"example.com":    addrs("127.0.0.1"),
		"evil.test":      addrs("127.0.0.1"),
		"evil6.test":     addrs("::ffff:127.0.0.1"),
		"metadata.test":  addrs("169.254.169.254"),
		"private.test":   addrs("10.1.2.3"),
		"mixed.test":     addrs("10.9.9.9", "127.0.0.1"),
		"nat64.test":     addrs("64:ff9b::7f00:1"),
		"unspec.test":    addrs("0.0.0.0"),
		"refused.test":   addrs("127.0.0.1"),
		"nowhere.test":   nil,
		"DoNotAsk.test":  addrs("127.0.0.1"),
		"notlisted.test": addrs("127.0.0.1"),
	}}
	cfg.Allow = a
	cfg.Resolver = tp.resolver
	cfg.OnConn = func(ev Event) {
		select {
		case tp.events <- ev:
		default:
			t.Errorf("event dropped: %+v", ev)
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	tp.Proxy = New(cfg)
	if l == nil {
		l, err = net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
	}
	tp.addr = l.Addr().String()
	go func() { tp.served <- tp.Serve(l) }()
	t.Cleanup(func() {
		tp.Close()
		select {
		case err := <-tp.served:
			if !errors.Is(err, ErrClosed) {
				t.Errorf("Serve = %v, want ErrClosed", err)
			}
		case <-time.After(waitLimit):
			t.Error("Serve did not return after Close")
		}
	})
	return tp
}

// event waits for the next event.
func (tp *testProxy) event(t *testing.T) Event {
	t.Helper()
	select {
	case ev := <-tp.events:
		return ev
	case <-time.After(waitLimit):
		t.Fatal("no event")
		return Event{}
	}
}

func (tp *testProxy) dial(t *testing.T) net.Conn {
	t.Helper()
	network := "tcp"
	if strings.HasPrefix(tp.addr, "/") {
		network = "unix"
	}
	c, err := net.Dial(network, tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(waitLimit))
	t.Cleanup(func() { c.Close() })
	return c
}

// httpTarget is an HTTP server on 127.0.0.1 that answers with the request's
// method, path and body.
func httpTarget(t *testing.T, tlsOn bool) (srv *httptest.Server, port string) {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s host=%s body=%s", r.Method, r.URL.Path, r.Host, b)
	})
	if tlsOn {
		srv = httptest.NewTLSServer(h)
	} else {
		srv = httptest.NewServer(h)
	}
	t.Cleanup(srv.Close)
	_, port, _ = net.SplitHostPort(srv.Listener.Addr().String())
	return srv, port
}

// echoServer is a TCP echo server on 127.0.0.1.
func echoServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String()
}

func httpClient(t *testing.T, proxyAddr string, tlsConf *tls.Config) *http.Client {
	t.Helper()
	pu := &url.URL{Scheme: "http", Host: proxyAddr}
	tr := &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: tlsConf}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: waitLimit}
}

func get(t *testing.T, c *http.Client, method, u, body string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error(), nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func TestHTTPForward(t *testing.T) {
	_, port := httpTarget(t, false)
	tp := startProxy(t, []string{"good.test:" + port, "127.0.0.1:" + port}, Config{}, nil)
	c := httpClient(t, tp.addr, nil)

	code, body, _ := get(t, c, "GET", "http://good.test:"+port+"/hello", "")
	if code != 200 || body != "GET /hello host=good.test:"+port+" body=" {
		t.Fatalf("GET = %d %q", code, body)
	}
	ev := tp.event(t)
	if ev.Outcome != OutcomeAllowed || ev.Proto != "http" || ev.Host != "good.test" || ev.Addr != "127.0.0.1:"+port || ev.Up == 0 || ev.Down == 0 {
		t.Errorf("event %+v", ev)
	}
	// The keep-alive connection carries a second request, with a body.
	code, body, _ = get(t, c, "POST", "http://good.test:"+port+"/p", "payload")
	if code != 200 || body != "POST /p host=good.test:"+port+" body=payload" {
		t.Fatalf("POST = %d %q", code, body)
	}
	if ev := tp.event(t); ev.Outcome != OutcomeAllowed || ev.Up < int64(len("payload")) {
		t.Errorf("event %+v", ev)
	}
	// The same connection, a host the allowlist does not name: 403.
	code, body, h := get(t, c, "GET", "http://notlisted.test:"+port+"/", "")
	if code != http.StatusForbidden || h.Get("X-Junction-Egress") != "denied" || !strings.Contains(body, "not in the allowlist") {
		t.Errorf("GET notlisted = %d %q %v", code, body, h)
	}
	if ev := tp.event(t); ev.Outcome != OutcomeDenied {
		t.Errorf("event %+v", ev)
	}
	if tp.resolver.wasAsked("notlisted.test") {
		t.Error("a name outside the allowlist was resolved")
	}
	st := tp.Stats()
	if st.Allowed != 2 || st.Denied != 1 || st.BytesUp == 0 || st.BytesDown == 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestConnectTLS(t *testing.T) {
	srv, port := httpTarget(t, true)
	tp := startProxy(t, []string{"example.com:" + port, "127.0.0.1:" + port}, Config{}, nil)
	tlsConf := srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	c := httpClient(t, tp.addr, tlsConf)
	code, body, _ := get(t, c, "GET", "https://example.com:"+port+"/tls", "")
	if code != 200 || body != "GET /tls host=example.com:"+port+" body=" {
		t.Fatalf("GET = %d %q", code, body)
	}
	c.Transport.(*http.Transport).CloseIdleConnections()
	ev := tp.event(t)
	if ev.Outcome != OutcomeAllowed || ev.Proto != "connect" || ev.Host != "example.com" || ev.Up == 0 || ev.Down == 0 || ev.Duration <= 0 {
		t.Errorf("event %+v", ev)
	}
}

func TestSOCKS5(t *testing.T) {
	_, port := httpTarget(t, false)
	tp := startProxy(t, []string{"good.test:" + port, "127.0.0.1:" + port}, Config{}, nil)
	d, err := proxy.SOCKS5("tcp", tp.addr, nil, proxy.Direct)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{DialContext: d.(proxy.ContextDialer).DialContext}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: waitLimit}
	code, body, _ := get(t, c, "GET", "http://good.test:"+port+"/s", "")
	if code != 200 || body != "GET /s host=good.test:"+port+" body=" {
		t.Fatalf("GET = %d %q", code, body)
	}
	tr.CloseIdleConnections()
	ev := tp.event(t)
	if ev.Outcome != OutcomeAllowed || ev.Proto != "socks5" || ev.Host != "good.test" || ev.Up == 0 || ev.Down == 0 {
		t.Errorf("event %+v", ev)
	}
	// An IP literal the allowlist names.
	code, _, _ = get(t, c, "GET", "http://127.0.0.1:"+port+"/ip", "")
	if code != 200 {
		t.Errorf("GET by IP = %d", code)
	}
}

// connectStatus sends CONNECT authority to the proxy and returns the
// status and body.
func connectStatus(t *testing.T, tp *testProxy, authority string) (int, string) {
	t.Helper()
	c := tp.dial(t)
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("CONNECT %s: %v", authority, err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, "" // a tunnel: no body to read
	}
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, "" // a tunnel: no body to read
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// socksConnect dials addr through the proxy with x/net/proxy.
func socksConnect(t *testing.T, tp *testProxy, addr string) error {
	t.Helper()
	d, err := proxy.SOCKS5("tcp", tp.addr, nil, proxy.Direct)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	c, err := d.(proxy.ContextDialer).DialContext(ctx, "tcp", addr)
	if err == nil {
		c.Close()
	}
	return err
}

func TestPolicy(t *testing.T) {
	echo := echoServer(t)
	_, port, _ := net.SplitHostPort(echo)
	denied := echoServer(t)
	_, deniedPort, _ := net.SplitHostPort(denied)
	dp, _ := strconv.Atoi(deniedPort)
	tp := startProxy(t, []string{
		"good.test:" + port,
		"*.wild.test:" + port,
		"evil.test:*", "evil6.test:*", "metadata.test:*", "private.test:*", "nat64.test:*", "unspec.test:*", "mixed.test:*",
		"nowhere.test:*",
		"127.0.0.1:" + port,
		"127.0.0.0/8:" + deniedPort,
	}, Config{DenyPorts: []uint16{uint16(dp)}}, nil)
	_, selfPort, _ := net.SplitHostPort(tp.addr)

	for _, c := range []struct {
		dest   string
		allow  bool
		reason string
	}{
		{"good.test:" + port, true, ""},
		{"GOOD.test.:" + port, true, ""},
		{"a.wild.test:" + port, true, ""},
		{"127.0.0.1:" + port, true, ""},
		{"[::ffff:127.0.0.1]:" + port, true, ""},
		{"mixed.test:" + port, true, ""}, // 10.9.9.9 is skipped, 127.0.0.1 is named
		{"good.test:1", false, "not in the allowlist"},
		{"wild.test:" + port, false, "not in the allowlist"},
		{"notlisted.test:" + port, false, "not in the allowlist"},
		{"127.0.0.2:" + port, false, "not in the allowlist"},
		{"[::1]:" + port, false, "not in the allowlist"},
		{"evil.test:" + deniedPort, false, "junction's own"},
		{"127.0.0.1:" + deniedPort, false, "junction's own"},
		{"127.0.0.1:" + selfPort, false, "junction's own"},
		{"evil.test:" + selfPort, false, "junction's own"},
		{"evil.test:9", false, "loopback address the allowlist does not name"},
		{"evil6.test:9", false, "loopback"},
		{"metadata.test:80", false, "link-local"},
		{"private.test:5432", false, "private"},
		{"nat64.test:80", false, "never reached"},
		{"unspec.test:80", false, "never reached"},
		{"0.0.0.0:" + port, false, "never reached"},
	} {
		code, body := connectStatus(t, tp, c.dest)
		ev := tp.event(t)
		if c.allow {
			if code != 200 || ev.Outcome != OutcomeAllowed || ev.Addr != "127.0.0.1:"+port {
				t.Errorf("CONNECT %s = %d %q, event %+v; want allowed", c.dest, code, body, ev)
			}
		} else if code != http.StatusForbidden || ev.Outcome != OutcomeDenied || !strings.Contains(body, c.reason) || !strings.Contains(ev.Reason, c.reason) {
			t.Errorf("CONNECT %s = %d %q, event %+v; want denied with %q", c.dest, code, body, ev, c.reason)
		}

		err := socksConnect(t, tp, c.dest)
		ev = tp.event(t)
		if c.allow {
			if err != nil || ev.Outcome != OutcomeAllowed {
				t.Errorf("SOCKS5 %s = %v, event %+v; want allowed", c.dest, err, ev)
			}
		} else if err == nil || !strings.Contains(err.Error(), "not allowed by ruleset") || ev.Outcome != OutcomeDenied || !strings.Contains(ev.Reason, c.reason) {
			t.Errorf("SOCKS5 %s = %v, event %+v; want denied with %q", c.dest, err, ev, c.reason)
		}
	}
	if tp.resolver.wasAsked("notlisted.test") {
		t.Error("a name outside the allowlist was resolved")
	}

	// Allowed but unresolvable: 502, SOCKS host unreachable.
	code, body := connectStatus(t, tp, "nowhere.test:80")
	if ev := tp.event(t); code != http.StatusBadGateway || ev.Outcome != OutcomeFailed {
		t.Errorf("CONNECT nowhere = %d %q, event %+v", code, body, ev)
	}
	if err := socksConnect(t, tp, "nowhere.test:80"); err == nil || !strings.Contains(err.Error(), "host unreachable") {
		t.Errorf("SOCKS5 nowhere = %v", err)
	}
	if ev := tp.event(t); ev.Outcome != OutcomeFailed {
		t.Errorf("event %+v", ev)
	}
}

func TestCIDRAndRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	tp := startProxy(t, []string{"127.0.0.0/8:" + closedPort, "refused.test:" + closedPort}, Config{}, nil)
	for _, dest := range []string{"127.0.0.1:" + closedPort, "refused.test:" + closedPort} {
		code, _ := connectStatus(t, tp, dest)
		if ev := tp.event(t); code != http.StatusBadGateway || ev.Outcome != OutcomeFailed || ev.Addr != "127.0.0.1:"+closedPort {
			t.Errorf("CONNECT %s = %d, event %+v", dest, code, ev)
		}
		if err := socksConnect(t, tp, dest); err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("SOCKS5 %s = %v", dest, err)
		}
		tp.event(t)
	}
}

func TestTunnelEchoAndClose(t *testing.T) {
	echo := echoServer(t)
	_, port, _ := net.SplitHostPort(echo)
	tp := startProxy(t, []string{"good.test:" + port, "127.0.0.1:" + port}, Config{}, nil)

	// An HTTP CONNECT tunnel, with bytes sent before the 200 arrives.
	c1 := tp.dial(t)
	fmt.Fprintf(c1, "CONNECT good.test:%s HTTP/1.1\r\nHost: good.test\r\n\r\nearly", port)
	br1 := bufio.NewReader(c1)
	resp, err := http.ReadResponse(br1, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT = %v %v", resp, err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(br1, buf); err != nil || string(buf) != "early" {
		t.Fatalf("echo = %q %v", buf, err)
	}

	// A SOCKS5 tunnel.
	d, _ := proxy.SOCKS5("tcp", tp.addr, nil, proxy.Direct)
	c2, err := d.Dial("tcp", "good.test:"+port)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.SetDeadline(time.Now().Add(waitLimit))
	io.WriteString(c2, "ping")
	if _, err := io.ReadFull(c2, buf[:4]); err != nil || string(buf[:4]) != "ping" {
		t.Fatalf("echo = %q %v", buf[:4], err)
	}
	if st := tp.Stats(); st.Active != 2 {
		t.Errorf("Active = %d, want 2", st.Active)
	}

	tp.Close() // returns only once both tunnels' goroutines are gone
	if st := tp.Stats(); st.Active != 0 {
		t.Errorf("Active after Close = %d", st.Active)
	}
	for _, r := range []io.Reader{br1, c2} {
		if n, err := r.Read(buf); err == nil {
			t.Errorf("read after Close = %d bytes, nil error", n)
		}
	}
	for range 2 {
		ev := tp.event(t)
		if ev.Outcome != OutcomeAllowed || ev.Up == 0 || ev.Down == 0 || ev.Reason != "proxy closed" {
			t.Errorf("event %+v", ev)
		}
	}
	if _, err := net.Dial("tcp", tp.addr); err == nil {
		t.Error("the listener still accepts after Close")
	}
}

func TestHalfClose(t *testing.T) {
	_, port := httpTarget(t, false)
	tp := startProxy(t, []string{"127.0.0.1:" + port}, Config{}, nil)
	c := tp.dial(t)
	fmt.Fprintf(c, "CONNECT 127.0.0.1:%s HTTP/1.1\r\n\r\n", port)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT = %v %v", resp, err)
	}
	// A request, then our write side closed: the response still comes.
	io.WriteString(c, "GET /half HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	c.(*net.TCPConn).CloseWrite()
	all, err := io.ReadAll(br)
	if err != nil || !bytes.Contains(all, []byte("GET /half")) {
		t.Fatalf("response %q %v", all, err)
	}
	if ev := tp.event(t); ev.Outcome != OutcomeAllowed || ev.Reason != "" {
		t.Errorf("event %+v", ev)
	}
}

func TestMalformed(t *testing.T) {
	tp := startProxy(t, []string{"good.test"}, Config{MaxHeaderBytes: 1024}, nil)
	for _, c := range []struct {
		name, send string
		status     int
		reason     string
	}{
		{"garbage", "GARBAGE\r\n\r\n", 400, "malformed"},
		{"origin form", "GET / HTTP/1.1\r\nHost: good.test\r\n\r\n", 400, "absolute"},
		{"https URI", "GET https://good.test/ HTTP/1.1\r\nHost: good.test\r\n\r\n", 400, "CONNECT"},
		{"ftp URI", "GET ftp://good.test/ HTTP/1.1\r\nHost: good.test\r\n\r\n", 400, "only http://"},
		{"connect no port", "CONNECT good.test HTTP/1.1\r\n\r\n", 400, "host:port"},
		{"connect port 0", "CONNECT good.test:0 HTTP/1.1\r\n\r\n", 400, "1-65535"},
		{"connect bad host", "CONNECT bad_host%00.test:443 HTTP/1.1\r\n\r\n", 400, "malformed"},
		{"connect bad name", "CONNECT a!b.test:443 HTTP/1.1\r\n\r\n", 400, "character"},
		{"zone", "CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\n\r\n", 400, "zone"},
		{"userinfo", "GET http://u:p@good.test/ HTTP/1.1\r\nHost: good.test\r\n\r\n", 400, "credentials"},
		{"http2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, "HTTP/2.0"},
		{"oversized header", "GET http://good.test/ HTTP/1.1\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n", 431, "over 1024 bytes"},
		{"oversized line", "GET http://good.test/" + strings.Repeat("a", 64<<10) + " HTTP/1.1\r\n\r\n", 431, "over 1024 bytes"},
	} {
		conn := tp.dial(t)
		go io.WriteString(conn, c.send) // may fail once the proxy answers and closes
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ev := tp.event(t)
		if resp.StatusCode != c.status || ev.Outcome != OutcomeInvalid || !strings.Contains(string(b), c.reason) || !strings.Contains(ev.Reason, c.reason) {
			t.Errorf("%s: %d %q, event %+v; want %d with %q", c.name, resp.StatusCode, b, ev, c.status, c.reason)
		}
		conn.Close()
	}
	if st := tp.Stats(); st.Invalid != 13 || st.Allowed+st.Denied != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestMalformedSOCKS(t *testing.T) {
	tp := startProxy(t, []string{"good.test"}, Config{}, nil)
	for _, c := range []struct {
		name   string
		send   []byte
		want   []byte // bytes the proxy answers before closing
		reason string
	}{
		{"no acceptable method", []byte{5, 1, 2}, []byte{5, 0xff}, "no-authentication"},
		{"no methods", []byte{5, 0}, nil, "no methods"},
		{"bind", []byte{5, 1, 0, 5, 2, 0, 1, 127, 0, 0, 1, 0, 80}, append([]byte{5, 0}, socksReply(socksCmdNotSupported)...), "command 2"},
		{"udp associate", []byte{5, 1, 0, 5, 3, 0, 1, 127, 0, 0, 1, 0, 80}, append([]byte{5, 0}, socksReply(socksCmdNotSupported)...), "command 3"},
		{"address type", []byte{5, 1, 0, 5, 1, 0, 9}, append([]byte{5, 0}, socksReply(socksAddrTypeNotSupport)...), "address type 9"},
		{"bad request version", []byte{5, 1, 0, 4, 1, 0, 1}, append([]byte{5, 0}, socksReply(socksGeneralFailure)...), "version 4"},
		{"port 0", []byte{5, 1, 0, 5, 1, 0, 3, 9, 'g', 'o', 'o', 'd', '.', 't', 'e', 's', 't', 0, 0}, append([]byte{5, 0}, socksReply(socksGeneralFailure)...), "port 0"},
		{"bad name", []byte{5, 1, 0, 5, 1, 0, 3, 3, 'a', '/', 'b', 0, 80}, append([]byte{5, 0}, socksReply(socksGeneralFailure)...), "character"},
		{"empty name", []byte{5, 1, 0, 5, 1, 0, 3, 0, 0, 80}, append([]byte{5, 0}, socksReply(socksGeneralFailure)...), "empty host name"},
		{"truncated", []byte{5, 1, 0, 5, 1, 0, 3, 9, 'g'}, []byte{5, 0}, "client closed"},
		{"socks4", []byte{4, 1, 0, 80, 127, 0, 0, 1, 0}, nil, "SOCKS4"},
	} {
		conn := tp.dial(t)
		conn.Write(c.send)
		if c.name == "truncated" {
			conn.(*net.TCPConn).CloseWrite()
		}
		got, err := io.ReadAll(conn)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		ev := tp.event(t)
		if !bytes.Equal(got, c.want) || ev.Outcome != OutcomeInvalid || !strings.Contains(ev.Reason, c.reason) {
			t.Errorf("%s: got % x, event %+v; want % x with %q", c.name, got, ev, c.want, c.reason)
		}
		conn.Close()
	}
}

func TestHandshakeTimeout(t *testing.T) {
	tp := startProxy(t, []string{"good.test"}, Config{HandshakeTimeout: 50 * time.Millisecond}, nil)
	for _, c := range []struct {
		name, send string
		want       string
	}{
		{"nothing", "", ""},
		{"partial HTTP", "CONNECT good.test:443 HTTP/1.1\r\nHost: go", "HTTP/1.1 408"},
		{"partial SOCKS", "\x05\x01\x00\x05\x01\x00\x03\x09goo", "\x05\x00"},
	} {
		conn := tp.dial(t)
		io.WriteString(conn, c.send)
		got, err := io.ReadAll(conn) // ends when the proxy gives up, not at the client's deadline
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if !strings.HasPrefix(string(got), c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
		if ev := tp.event(t); ev.Outcome != OutcomeInvalid || !strings.Contains(ev.Reason, "timed out") {
			t.Errorf("%s: event %+v", c.name, ev)
		}
	}
}

func TestIdleTimeout(t *testing.T) {
	echo := echoServer(t)
	_, port, _ := net.SplitHostPort(echo)
	tp := startProxy(t, []string{"127.0.0.1:" + port}, Config{IdleTimeout: 300 * time.Millisecond}, nil)
	c := tp.dial(t)
	fmt.Fprintf(c, "CONNECT 127.0.0.1:%s HTTP/1.1\r\n\r\nx", port)
	br := bufio.NewReader(c)
	if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT = %v %v", resp, err)
	}
	rest, err := io.ReadAll(br) // the echo of "x", then the idle end
	if err != nil || string(rest) != "x" {
		t.Errorf("tunnel = %q %v", rest, err)
	}
	if ev := tp.event(t); ev.Outcome != OutcomeAllowed || !strings.Contains(ev.Reason, "idle") || ev.Up != 1 || ev.Down != 1 {
		t.Errorf("event %+v", ev)
	}
}

func TestMaxConns(t *testing.T) {
	echo := echoServer(t)
	_, port, _ := net.SplitHostPort(echo)
	tp := startProxy(t, []string{"127.0.0.1:" + port}, Config{MaxConns: 1}, nil)
	c1 := tp.dial(t)
	fmt.Fprintf(c1, "CONNECT 127.0.0.1:%s HTTP/1.1\r\n\r\n", port)
	if resp, err := http.ReadResponse(bufio.NewReader(c1), nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT = %v %v", resp, err)
	}
	c2 := tp.dial(t)
	if b, err := io.ReadAll(c2); err != nil || len(b) != 0 {
		t.Errorf("second connection: %q %v, want closed", b, err)
	}
	if ev := tp.event(t); ev.Outcome != OutcomeRejected || !strings.Contains(ev.Reason, "over 1 connections") {
		t.Errorf("event %+v", ev)
	}
	if st := tp.Stats(); st.Rejected != 1 || st.Active != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestUnixListener(t *testing.T) {
	_, port := httpTarget(t, false)
	sock := filepath.Join(t.TempDir(), "egress.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	tp := startProxy(t, []string{"good.test:" + port, "127.0.0.1:" + port}, Config{}, l)
	tr := &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "proxy.invalid"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}
	defer tr.CloseIdleConnections()
	code, body, _ := get(t, &http.Client{Transport: tr, Timeout: waitLimit}, "GET", "http://good.test:"+port+"/u", "")
	if code != 200 || !strings.HasPrefix(body, "GET /u") {
		t.Fatalf("GET = %d %q", code, body)
	}
	if ev := tp.event(t); ev.Outcome != OutcomeAllowed {
		t.Errorf("event %+v", ev)
	}
}

func TestLogger(t *testing.T) {
	var buf syncBuffer
	tp := startProxy(t, nil, Config{Logger: slog.New(slog.NewTextHandler(&buf, nil))}, nil)
	code, _ := connectStatus(t, tp, "good.test:443")
	tp.event(t)
	if code != 403 {
		t.Errorf("CONNECT with an empty allowlist = %d", code)
	}
	for _, want := range []string{"level=WARN", "outcome=denied", "proto=connect", "host=good.test", "port=443", "up=0", "down=0", "duration="} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log %q lacks %q", buf.String(), want)
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
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

func TestServeAfterClose(t *testing.T) {
	p := New(Config{})
	p.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Serve(l); !errors.Is(err, ErrClosed) {
		t.Errorf("Serve after Close = %v", err)
	}
	if _, err := net.Dial("tcp", l.Addr().String()); err == nil {
		t.Error("Serve after Close left the listener open")
	}
}

func FuzzHTTPRequest(f *testing.F) {
	for _, s := range []string{
		"CONNECT good.test:443 HTTP/1.1\r\n\r\n",
		"GET http://good.test/x HTTP/1.1\r\nHost: good.test\r\n\r\n",
		"POST http://[::1]:8080/ HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
		"CONNECT [::ffff:127.0.0.1]:80 HTTP/1.0\r\n\r\n",
		"GET / HTTP/1.1\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, tg, status, err := httpRequest(bufio.NewReader(bytes.NewReader(b)))
		if err != nil {
			if status < 400 {
				t.Fatalf("error %v with status %d", err, status)
			}
			return
		}
		checkTarget(t, tg)
		if req.Method != http.MethodConnect && tg.port == 0 {
			t.Fatal("port 0")
		}
	})
}

func FuzzSOCKSRequest(f *testing.F) {
	f.Add([]byte{5, 1, 0, 5, 1, 0, 3, 9, 'g', 'o', 'o', 'd', '.', 't', 'e', 's', 't', 0, 80})
	f.Add([]byte{5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, 1, 187})
	f.Add([]byte{5, 2, 0, 2, 5, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1, 0, 22})
	f.Fuzz(func(t *testing.T, b []byte) {
		var w bytes.Buffer
		tg, err := readSOCKSRequest(bytes.NewReader(b), &w)
		if err != nil {
			return
		}
		checkTarget(t, tg)
		if !bytes.Equal(w.Bytes(), []byte{5, 0}) {
			t.Fatalf("wrote % x", w.Bytes())
		}
	})
}

// checkTarget checks a parsed destination is well formed: a port, and a
// normalized name or an unmapped address without a zone.
func checkTarget(t *testing.T, tg target) {
	t.Helper()
	if tg.port == 0 {
		t.Fatal("port 0")
	}
	if tg.ip.IsValid() {
		if tg.ip.Is4In6() || tg.ip.Zone() != "" || tg.host != tg.ip.String() {
			t.Fatalf("address %v / %q", tg.ip, tg.host)
		}
		return
	}
	if n, err := normalizeName(tg.host); err != nil || n != tg.host {
		t.Fatalf("name %q: %v", tg.host, err)
	}
	if _, err := netip.ParseAddr(tg.host); err == nil {
		t.Fatalf("name %q is an address", tg.host)
	}
}

// TestForwardRetriesStaleUpstream: a server that closes each connection
// after one response while announcing keep-alive; the proxy's second
// request on the kept connection fails before any response and is retried
// once on a new one.
func TestForwardRetriesStaleUpstream(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ; n++ {
			c, err := l.Accept()
			if err != nil {
				return
			}
			br := bufio.NewReader(c)
			if req, err := http.ReadRequest(br); err == nil {
				body := fmt.Sprintf("conn %d %s", n, req.URL.Path)
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close(); wg.Wait() })
	_, port, _ := net.SplitHostPort(l.Addr().String())
	tp := startProxy(t, []string{"127.0.0.1:" + port}, Config{}, nil)

	c := tp.dial(t)
	br := bufio.NewReader(c)
	for i, want := range []string{"conn 0 /a", "conn 1 /b"} {
		path := []string{"/a", "/b"}[i]
		fmt.Fprintf(c, "GET http://127.0.0.1:%s%s HTTP/1.1\r\nHost: x\r\n\r\n", port, path)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != want {
			t.Errorf("request %d = %d %q, want %q", i, resp.StatusCode, b, want)
		}
		if ev := tp.event(t); ev.Outcome != OutcomeAllowed {
			t.Errorf("event %+v", ev)
		}
	}
}
