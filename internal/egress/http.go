package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// httpRequest reads one proxy request from br and returns it with its
// destination. A CONNECT request names host:port (the port is required);
// any other request must have an absolute http:// URI (port 80 when not
// given). A malformed request gets an error and the status to answer.
func httpRequest(br *bufio.Reader) (*http.Request, target, int, error) {
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, target{}, http.StatusBadRequest, err
	}
	if req.ProtoMajor != 1 {
		return req, target{}, http.StatusHTTPVersionNotSupported, fmt.Errorf("HTTP/%d.%d is not supported", req.ProtoMajor, req.ProtoMinor)
	}
	if req.Method == http.MethodConnect {
		host, portStr, err := net.SplitHostPort(req.RequestURI)
		if err != nil {
			return req, target{}, http.StatusBadRequest, fmt.Errorf("CONNECT %q: want host:port", req.RequestURI)
		}
		port, err := parsePort(portStr)
		if err != nil {
			return req, target{}, http.StatusBadRequest, fmt.Errorf("CONNECT %q: %v", req.RequestURI, err)
		}
		t, err := parseHost(host, port)
		if err != nil {
			return req, target{}, http.StatusBadRequest, fmt.Errorf("CONNECT %q: %v", req.RequestURI, err)
		}
		return req, t, 0, nil
	}
	u := req.URL
	if !u.IsAbs() || u.Host == "" {
		return req, target{}, http.StatusBadRequest, fmt.Errorf("%s %q: this is a proxy: send an absolute http:// URI, or CONNECT", req.Method, req.RequestURI)
	}
	if !strings.EqualFold(u.Scheme, "http") {
		return req, target{}, http.StatusBadRequest, fmt.Errorf("%s %q: only http:// is forwarded: use CONNECT for %s", req.Method, req.RequestURI, u.Scheme)
	}
	if u.User != nil {
		return req, target{}, http.StatusBadRequest, fmt.Errorf("%s: credentials in the URI are not forwarded", req.Method)
	}
	port := uint16(80)
	if ps := u.Port(); ps != "" {
		if port, err = parsePort(ps); err != nil {
			return req, target{}, http.StatusBadRequest, fmt.Errorf("%s %q: %v", req.Method, req.RequestURI, err)
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return req, target{}, http.StatusBadRequest, fmt.Errorf("%s %q: empty port", req.Method, req.RequestURI)
	}
	t, err := parseHost(u.Hostname(), port)
	if err != nil {
		return req, target{}, http.StatusBadRequest, fmt.Errorf("%s %q: %v", req.Method, req.RequestURI, err)
	}
	return req, t, 0, nil
}

// serveHTTP serves an HTTP proxy connection: one CONNECT tunnel, or a
// series of plain HTTP requests, each checked against the policy.
func (p *Proxy) serveHTTP(c net.Conn, br *bufio.Reader, lr *limitReader, start time.Time, client string) {
	var up *upstream
	defer func() {
		if up != nil {
			p.untrack(up.conn)
		}
	}()
	for first := true; ; first = false {
		if !first {
			// A keep-alive connection: wait IdleTimeout for the next
			// request, then HandshakeTimeout for its headers.
			c.SetReadDeadline(time.Now().Add(p.cfg.IdleTimeout))
			if _, err := br.Peek(1); err != nil {
				return
			}
			start = time.Now()
			c.SetReadDeadline(start.Add(p.cfg.HandshakeTimeout))
			lr.limit(p.cfg.MaxHeaderBytes + readBufSize)
		}
		ev := Event{Start: start, Client: client, Proto: "http"}
		req, t, status, err := httpRequest(br)
		if req != nil && req.Method == http.MethodConnect {
			ev.Proto = "connect"
		}
		if err != nil {
			var reason string
			switch {
			case lr.exceeded:
				status, reason = http.StatusRequestHeaderFieldsTooLarge, fmt.Sprintf("request header over %d bytes", p.cfg.MaxHeaderBytes)
			case req != nil:
				reason = err.Error()
			case errors.Is(err, os.ErrDeadlineExceeded):
				status, reason = http.StatusRequestTimeout, errText(err)
			case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
				status, reason = 0, errText(err)
			default:
				reason = "malformed request: " + err.Error()
			}
			if status != 0 {
				writeStatus(c, status, "egress: "+reason)
			}
			ev.Outcome, ev.Reason = OutcomeInvalid, reason
			p.emit(ev)
			if status != 0 {
				lingerClose(c)
			}
			return
		}
		lr.unlimit()
		ev.Host, ev.Port = t.host, t.port
		if req.Method == http.MethodConnect {
			p.serveConnect(c, br, lr, t, &ev)
			return
		}
		if !p.forward(c, br, req, t, &up, &ev) {
			return
		}
	}
}

// serveConnect answers a CONNECT request and runs its tunnel.
func (p *Proxy) serveConnect(c net.Conn, br *bufio.Reader, lr *limitReader, t target, ev *Event) {
	up, addr, err := p.connect(t)
	ev.Addr = addr
	if err != nil {
		p.refuse(c, err, ev)
		return
	}
	defer p.untrack(up)
	c.SetWriteDeadline(time.Now().Add(p.cfg.IdleTimeout))
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		ev.Outcome, ev.Reason = OutcomeAllowed, errText(err)
		p.emit(*ev)
		return
	}
	p.tunnel(c, br, lr, up, ev)
}

// refuse answers a failed connect: 403 for a denial, 502 or 504 for a
// failure, and emits ev.
func (p *Proxy) refuse(c net.Conn, err error, ev *Event) {
	var d *denial
	var ne net.Error
	status := http.StatusBadGateway
	switch {
	case errors.As(err, &d):
		status, ev.Outcome = http.StatusForbidden, OutcomeDenied
	case errors.Is(err, ErrClosed):
		status, ev.Outcome = http.StatusServiceUnavailable, OutcomeRejected
	case errors.As(err, &ne) && ne.Timeout():
		status, ev.Outcome = http.StatusGatewayTimeout, OutcomeFailed
	default:
		ev.Outcome = OutcomeFailed
	}
	ev.Reason = err.Error()
	writeStatus(c, status, "egress: "+ev.Reason)
	p.emit(*ev)
	lingerClose(c)
}

// upstream is a plain HTTP forwarding connection kept across requests to
// the same destination.
type upstream struct {
	key  string
	addr string
	conn net.Conn
	cc   *countConn
	br   *bufio.Reader
}

// hopHeaders are removed from forwarded requests and responses
// (RFC 9110 section 7.6.1), with the proxy's own.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func removeHopHeaders(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// forward sends one plain HTTP request to t and its response back, and
// reports whether the client connection may carry another request. A
// request without a body that fails on a kept upstream connection before
// any response (the server closed it while idle) is retried once on a new
// connection.
func (p *Proxy) forward(c net.Conn, br *bufio.Reader, req *http.Request, t target, upp **upstream, ev *Event) bool {
	if up := *upp; up != nil && up.key != t.String() {
		p.untrack(up.conn)
		*upp = nil
	}
	idle := p.cfg.IdleTimeout
	removeHopHeaders(req.Header)
	req.Header.Del("Expect") // the proxy sends the body at once
	req.RequestURI = ""
	req.Host = req.URL.Host // the Host header is the authority that was checked
	noBody := req.Body == nil || req.Body == http.NoBody || req.ContentLength == 0 && len(req.TransferEncoding) == 0
	wreq := req.Clone(req.Context())
	wreq.Body = &idleBody{r: req.Body, c: c, idle: idle}
	if noBody {
		wreq.Body = http.NoBody
	}

	var resp *http.Response
	var up *upstream
	var upBytes, downBytes int64
	for attempt := 0; ; attempt++ {
		up = *upp
		reused := up != nil
		if up == nil {
			conn, addr, err := p.connect(t)
			ev.Addr = addr
			if err != nil {
				p.refuse(c, err, ev)
				return false
			}
			cc := &countConn{Conn: conn}
			up = &upstream{key: t.String(), addr: addr, conn: conn, cc: cc,
				br: bufio.NewReaderSize(&idleConn{Conn: cc, idle: idle}, readBufSize)}
			*upp = up
		}
		ev.Addr = up.addr
		upBefore, downBefore := up.cc.written, up.cc.read
		var err error
		resp, err = p.roundTrip(up, wreq, req, c)
		upBytes += up.cc.written - upBefore
		downBytes += up.cc.read - downBefore
		if err == nil {
			break
		}
		p.untrack(up.conn)
		*upp = nil
		if reused && noBody && attempt == 0 && up.cc.read == downBefore {
			continue
		}
		ev.Up, ev.Down = upBytes, downBytes
		ev.Outcome, ev.Reason = OutcomeFailed, "forward: "+err.Error()
		writeStatus(c, http.StatusBadGateway, "egress: "+ev.Reason)
		p.emit(*ev)
		lingerClose(c)
		return false
	}
	readAfterHeader := up.cc.read
	keep := !req.Close && !resp.Close
	removeHopHeaders(resp.Header)
	resp.Close = !keep
	cw := bufio.NewWriterSize(&idleConn{Conn: c, idle: idle}, readBufSize)
	werr := resp.Write(cw)
	if werr == nil {
		werr = cw.Flush()
	}
	resp.Body.Close()
	ev.Up, ev.Down = upBytes, downBytes+up.cc.read-readAfterHeader
	ev.Outcome = OutcomeAllowed
	if werr != nil {
		ev.Reason = "write response: " + errText(werr)
		keep = false
	}
	if !drained(req.Body) {
		keep = false
	}
	if resp.Close || werr != nil {
		p.untrack(up.conn)
		*upp = nil
	}
	p.emit(*ev)
	return keep
}

// roundTrip writes wreq to up and reads the final response's header; the
// response body is read as it is copied to the client. 1xx interim
// responses (103 Early Hints) are passed to the client c.
func (p *Proxy) roundTrip(up *upstream, wreq, req *http.Request, c net.Conn) (*http.Response, error) {
	bw := bufio.NewWriterSize(&idleConn{Conn: up.cc, idle: p.cfg.IdleTimeout}, readBufSize)
	if err := wreq.Write(bw); err != nil {
		return nil, err
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	for {
		resp, err := http.ReadResponse(up.br, req)
		if err != nil {
			return nil, err
		}
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			resp.Body.Close()
			return nil, errors.New("upstream switched protocols on a plain HTTP request: use CONNECT")
		case resp.StatusCode >= 200:
			return resp, nil
		}
		removeHopHeaders(resp.Header)
		resp.Write(&idleConn{Conn: c, idle: p.cfg.IdleTimeout})
	}
}

// drained reports whether a request body was read to its end.
func drained(b io.ReadCloser) bool {
	if b == nil || b == http.NoBody {
		return true
	}
	var x [1]byte
	n, err := b.Read(x[:])
	return n == 0 && err == io.EOF
}

// idleBody reads a request body from the client with the idle clock on
// the client connection.
type idleBody struct {
	r    io.ReadCloser
	c    net.Conn
	idle time.Duration
}

func (b *idleBody) Read(p []byte) (int, error) {
	b.c.SetReadDeadline(time.Now().Add(b.idle))
	return b.r.Read(p)
}

func (b *idleBody) Close() error { return nil }

// idleConn sets a deadline of now+idle before each read and write.
type idleConn struct {
	net.Conn
	idle time.Duration
}

func (c *idleConn) Read(b []byte) (int, error) {
	c.Conn.SetReadDeadline(time.Now().Add(c.idle))
	return c.Conn.Read(b)
}

func (c *idleConn) Write(b []byte) (int, error) {
	c.Conn.SetWriteDeadline(time.Now().Add(c.idle))
	return c.Conn.Write(b)
}

// countConn counts the bytes read and written (one goroutine at a time).
type countConn struct {
	net.Conn
	read, written int64
}

func (c *countConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.read += int64(n)
	return n, err
}

func (c *countConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.written += int64(n)
	return n, err
}

// writeStatus writes a short plain-text response and asks the client to
// close.
func writeStatus(c net.Conn, status int, msg string) {
	body := msg + "\n"
	c.SetWriteDeadline(time.Now().Add(lingerTimeout))
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %s\r\nConnection: close\r\nX-Junction-Egress: %s\r\n\r\n%s",
		status, http.StatusText(status), strconv.Itoa(len(body)), outcomeHeader(status), body)
}

// lingerTimeout bounds writing an error response and draining after it.
const lingerTimeout = time.Second

// lingerClose half-closes c and reads what the client still sends (up to
// 256 KiB, for up to half a second), so that closing with unread data
// does not reset the connection before the client reads the response.
func lingerClose(c net.Conn) {
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	c.SetReadDeadline(time.Now().Add(lingerTimeout / 2))
	io.CopyN(io.Discard, c, 256<<10)
}

func outcomeHeader(status int) string {
	switch status {
	case http.StatusForbidden:
		return "denied"
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		return "failed"
	case http.StatusServiceUnavailable:
		return "rejected"
	}
	return "invalid"
}

func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
func isUnreachable(err error) bool {
	return errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EHOSTUNREACH)
}
