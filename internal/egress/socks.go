package egress

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"
)

const socksVersion = 5

// SOCKS5 reply codes (RFC 1928 section 6).
const (
	socksSucceeded          = 0
	socksGeneralFailure     = 1
	socksNotAllowed         = 2
	socksNetUnreachable     = 3
	socksHostUnreachable    = 4
	socksConnRefused        = 5
	socksTTLExpired         = 6
	socksCmdNotSupported    = 7
	socksAddrTypeNotSupport = 8
)

// socksError is a handshake failure with the reply code to send (none
// when code < 0: the client gets the method refusal or nothing).
type socksError struct {
	code int
	msg  string
}

func (e *socksError) Error() string { return e.msg }

// readSOCKSRequest reads a SOCKS5 greeting and CONNECT request from r,
// writing the method choice to w. Only the no-authentication method and
// the CONNECT command are supported; a domain name is returned as a name
// for the proxy to resolve (or as an address when it is an IP literal).
// On a protocol error it returns a *socksError, having written what the
// client should see before the reply (the reply itself is the caller's).
func readSOCKSRequest(r io.Reader, w io.Writer) (target, error) {
	var hdr [2]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return target{}, err
	}
	if hdr[0] != socksVersion {
		return target{}, &socksError{-1, fmt.Sprintf("SOCKS version %d, want 5", hdr[0])}
	}
	if hdr[1] == 0 {
		return target{}, &socksError{-1, "SOCKS5 greeting offers no methods"}
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(r, methods); err != nil {
		return target{}, err
	}
	noAuth := false
	for _, m := range methods {
		noAuth = noAuth || m == 0
	}
	if !noAuth {
		w.Write([]byte{socksVersion, 0xff})
		return target{}, &socksError{-1, "SOCKS5 client does not offer the no-authentication method"}
	}
	if _, err := w.Write([]byte{socksVersion, 0}); err != nil {
		return target{}, err
	}
	var req [4]byte
	if _, err := io.ReadFull(r, req[:]); err != nil {
		return target{}, err
	}
	if req[0] != socksVersion {
		return target{}, &socksError{socksGeneralFailure, fmt.Sprintf("SOCKS request version %d, want 5", req[0])}
	}
	var host string
	switch req[3] {
	case 1:
		var a [4]byte
		if _, err := io.ReadFull(r, a[:]); err != nil {
			return target{}, err
		}
		host = netip.AddrFrom4(a).String()
	case 4:
		var a [16]byte
		if _, err := io.ReadFull(r, a[:]); err != nil {
			return target{}, err
		}
		host = netip.AddrFrom16(a).String()
	case 3:
		var n [1]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return target{}, err
		}
		name := make([]byte, n[0])
		if _, err := io.ReadFull(r, name); err != nil {
			return target{}, err
		}
		host = string(name)
	default:
		return target{}, &socksError{socksAddrTypeNotSupport, fmt.Sprintf("SOCKS address type %d is not supported", req[3])}
	}
	var pb [2]byte
	if _, err := io.ReadFull(r, pb[:]); err != nil {
		return target{}, err
	}
	if req[1] != 1 {
		return target{}, &socksError{socksCmdNotSupported, fmt.Sprintf("SOCKS command %d is not supported: only CONNECT (1)", req[1])}
	}
	port := binary.BigEndian.Uint16(pb[:])
	if port == 0 {
		return target{}, &socksError{socksGeneralFailure, "SOCKS request for port 0"}
	}
	t, err := parseHost(host, port)
	if err != nil {
		return target{}, &socksError{socksGeneralFailure, fmt.Sprintf("SOCKS destination %q: %v", host, err)}
	}
	return t, nil
}

// socksReply is a reply with a zero bound address: the proxy's own
// addresses are none of the client's business.
func socksReply(code byte) []byte {
	return []byte{socksVersion, code, 0, 1, 0, 0, 0, 0, 0, 0}
}

// serveSOCKS serves a SOCKS5 connection whose first byte is in br.
func (p *Proxy) serveSOCKS(c net.Conn, br *bufio.Reader, lr *limitReader, start time.Time, client string) {
	ev := Event{Start: start, Client: client, Proto: "socks5"}
	t, err := readSOCKSRequest(br, c)
	if err != nil {
		var se *socksError
		if errors.As(err, &se) {
			if se.code >= 0 {
				c.Write(socksReply(byte(se.code)))
			}
			ev.Reason = se.msg
		} else {
			ev.Reason = errText(err)
		}
		ev.Outcome = OutcomeInvalid
		p.emit(ev)
		return
	}
	ev.Host, ev.Port = t.host, t.port
	up, addr, err := p.connect(t)
	ev.Addr = addr
	if err != nil {
		var d *denial
		code := byte(socksGeneralFailure)
		switch {
		case errors.As(err, &d):
			code = socksNotAllowed
			ev.Outcome = OutcomeDenied
		case errors.Is(err, ErrClosed):
			ev.Outcome = OutcomeRejected
		default:
			ev.Outcome = OutcomeFailed
			code = dialReplyCode(err)
		}
		c.Write(socksReply(code))
		ev.Reason = err.Error()
		p.emit(ev)
		return
	}
	defer p.untrack(up)
	if _, err := c.Write(socksReply(socksSucceeded)); err != nil {
		ev.Outcome, ev.Reason = OutcomeAllowed, errText(err)
		p.emit(ev)
		return
	}
	p.tunnel(c, br, lr, up, &ev)
}

// dialReplyCode maps a resolve or connect failure to a SOCKS reply code.
func dialReplyCode(err error) byte {
	var dnsErr *net.DNSError
	var ne net.Error
	switch {
	case errors.As(err, &dnsErr):
		return socksHostUnreachable
	case errors.As(err, &ne) && ne.Timeout():
		return socksTTLExpired
	case isRefused(err):
		return socksConnRefused
	case isUnreachable(err):
		return socksNetUnreachable
	}
	return socksHostUnreachable
}

// tunnel forwards what the client already sent (in br), then splices
// client and upstream, and emits ev.
func (p *Proxy) tunnel(c net.Conn, br *bufio.Reader, lr *limitReader, up net.Conn, ev *Event) {
	lr.unlimit()
	c.SetDeadline(time.Time{})
	ev.Outcome = OutcomeAllowed
	var pre int64
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		up.SetWriteDeadline(time.Now().Add(p.cfg.IdleTimeout))
		w, err := up.Write(b)
		pre = int64(w)
		if err != nil {
			ev.Up, ev.Reason = pre, err.Error()
			p.emit(*ev)
			return
		}
	}
	u, d, err := p.splice(c, up)
	ev.Up, ev.Down = pre+u, d
	if err != nil && !p.isClosed() {
		ev.Reason = err.Error()
	} else if p.isClosed() {
		ev.Reason = "proxy closed"
	}
	p.emit(*ev)
}
