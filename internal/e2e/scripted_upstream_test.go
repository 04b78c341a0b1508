package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The scripted upstream of the conversation tests (conversation_test.go)
// is this test binary run again by junction as a stdio MCP server. It is a
// relay, not a server: it connects to the test that started the hub (the
// address is in envConvUpstream, which junction passes on to its
// children), says which script it is for (its first argument), and then
// copies the hub's lines to the test and the test's bytes to the hub. The
// script runs in the test, next to the host's side of the conversation,
// so either side can wait for the other without a second channel, and
// everything the hub sent is recorded by the test itself.
//
// The switch is an init function rather than a case in TestMain because
// TestMain lives in harness_test.go; init runs before TestMain, and the
// relay exits before the testing package parses any flag.

// envConvUpstream holds the 127.0.0.1 address of the test's relay
// listener. Set only on junction processes the conversation tests start.
const envConvUpstream = "JUNCTION_E2E_CONVERSATION_UPSTREAM"

func init() {
	if addr := os.Getenv(envConvUpstream); addr != "" {
		os.Exit(relayUpstream(addr, os.Args[1:]))
	}
}

// relayUpstream is the scripted upstream's main: it relays stdin to the
// test at addr and the test's replies to stdout, and returns when either
// side is done (the hub closed stdin, or the script ended the process).
func relayUpstream(addr string, args []string) int {
	script := "upstream"
	if len(args) > 0 {
		script = args[0]
	}
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		fmt.Fprintf(os.Stderr, "scripted upstream %s: %v\n", script, err)
		return 1
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "%s\n", script); err != nil {
		fmt.Fprintf(os.Stderr, "scripted upstream %s: %v\n", script, err)
		return 1
	}
	done := make(chan struct{}, 2)
	go func() {
		io.Copy(conn, os.Stdin)
		conn.(*net.TCPConn).CloseWrite()
		done <- struct{}{}
	}()
	go func() {
		io.Copy(os.Stdout, conn)
		done <- struct{}{}
	}()
	<-done
	return 0
}

// relayListener accepts the scripted upstreams of one conversation run:
// each connection is one process junction spawned.
type relayListener struct {
	ln  net.Listener
	run *convRun
	wg  sync.WaitGroup // the accept loop and one goroutine per connection

	mu    sync.Mutex // guards conns
	conns []net.Conn
}

func newRelayListener(r *convRun) (*relayListener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &relayListener{ln: ln, run: r}
	l.wg.Add(1)
	go l.accept()
	return l, nil
}

func (l *relayListener) addr() string { return l.ln.Addr().String() }

func (l *relayListener) accept() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer c.Close()
			br := bufio.NewReaderSize(c, 64<<10)
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			hello, err := br.ReadString('\n')
			if err != nil {
				l.run.failf("scripted upstream: no hello line: %v", err)
				return
			}
			c.SetReadDeadline(time.Time{})
			l.run.serveUpstream(strings.TrimSpace(hello), c, br)
		}()
	}
}

// close stops accepting and waits, up to bound, for the connections to
// end (they end when junction stops its upstreams); then it closes them.
func (l *relayListener) close(bound time.Duration) bool {
	l.ln.Close()
	done := make(chan struct{})
	go func() {
		l.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(bound):
	}
	l.mu.Lock()
	for _, c := range l.conns {
		c.Close()
	}
	l.mu.Unlock()
	<-done
	return false
}

// serveUpstream runs the script base (its block for this process: see
// "spawn") for one scripted upstream process connected as c, recording
// the hub ⇄ upstream link, until the process ends or the run's deadline
// passes. conversation_test.go describes the verbs.
func (r *convRun) serveUpstream(base string, c net.Conn, br *bufio.Reader) {
	r.mu.Lock()
	l := r.links[base]
	if l == nil {
		r.mu.Unlock()
		r.failf("a scripted upstream asked for script %q, which the file does not have", base)
		return
	}
	l.spawns++
	if l.spawns > 1 {
		l.got = append(l.got, convStep{verb: "spawn"})
	}
	var block []convStep
	if l.spawns <= len(l.blocks) {
		block = l.blocks[l.spawns-1]
	}
	r.mu.Unlock()

	lines := make(chan []byte)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(lines)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		c.Close()
		for range lines {
		}
		<-readerDone
	}()
	timer := time.NewTimer(time.Until(r.deadline))
	defer timer.Stop()
	next := func() (any, bool) {
		select {
		case line, ok := <-lines:
			if !ok {
				return nil, false
			}
			v, err := parseJSONTree(line)
			if err != nil {
				v = jsonStrLit("not JSON: " + string(bytes.TrimSpace(line)))
			}
			return v, true
		case <-timer.C:
			return nil, false
		}
	}
	write := func(b []byte) {
		c.SetWriteDeadline(r.deadline)
		if _, err := c.Write(append(b, '\n')); err != nil {
			r.failf("upstream %s: write: %v", base, err)
		}
	}
	// unexpected records a message that matches no recv, answering a
	// request with an error so that the hub does not wait for it.
	unexpected := func(v any) {
		r.mu.Lock()
		normaliseFromHub(v, nil, l.vars)
		l.got = append(l.got, convStep{verb: "recv", msg: v})
		r.upRecv = append(r.upRecv, msgMethod(v))
		r.broadcast(true)
		var answer []byte
		if msgID(v) != "" && msgMethod(v) != "" {
			tmpl := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"not in the conversation script"}}`, msgID(v))
			msg, _ := parseJSONTree([]byte(tmpl))
			l.got = append(l.got, convStep{verb: "send", msg: msg})
			answer, _ = l.vars.substitute([]byte(tmpl))
		}
		r.mu.Unlock()
		if answer != nil {
			write(answer)
		}
	}
	for _, st := range block {
		switch st.verb {
		case "recv":
			v, ok := next()
			for ok && !recvMatches(st.msg, v) {
				unexpected(v)
				v, ok = next()
			}
			if !ok {
				return
			}
			r.mu.Lock()
			normaliseFromHub(v, st.msg, l.vars)
			l.got = append(l.got, convStep{verb: "recv", msg: v, comment: st.comment})
			r.upRecv = append(r.upRecv, msgMethod(v))
			r.broadcast(true)
			r.mu.Unlock()
		case "send":
			r.mu.Lock()
			body, unbound := l.vars.substitute(st.raw)
			l.got = append(l.got, st)
			r.broadcast(true)
			r.mu.Unlock()
			if len(unbound) > 0 {
				r.failf("upstream %s line %d: placeholders not bound: %v", l.section, st.line, unbound)
			}
			write(body)
		case "write":
			r.mu.Lock()
			l.got = append(l.got, st)
			r.mu.Unlock()
			write([]byte(st.arg))
		case "await":
			who, rest, _ := strings.Cut(st.arg, " ")
			method, count, err := parseAwaitHost(rest)
			if who != "host" || err != nil {
				r.failf("upstream %s line %d: await %q: want host METHOD [N]", l.section, st.line, st.arg)
				return
			}
			r.mu.Lock()
			l.got = append(l.got, st)
			r.mu.Unlock()
			// Whenever it was sent: the host may be ahead of the upstream.
			what := fmt.Sprintf("the host to send %s (%d in all)", method, count)
			if err := r.waitUntil(what, func() bool {
				n := 0
				for _, m := range r.hostSent {
					if m == method {
						n++
					}
				}
				return n >= count
			}); err != nil {
				r.failf("upstream %s line %d: %v", l.section, st.line, err)
				return
			}
		case "exit":
			// The process ends here, as if it crashed: closing the
			// connection ends the relay, so junction sees its stdout
			// close and the process exit.
			r.mu.Lock()
			l.got = append(l.got, st)
			r.broadcast(true)
			r.mu.Unlock()
			return
		}
	}
	for {
		v, ok := next()
		if !ok {
			return
		}
		unexpected(v)
	}
}

// parseAwaitHost parses the argument of an upstream's "await host": a
// method, and optionally how many messages with that method the host must
// have sent in all (1 if not given), for a later process (after "spawn")
// that waits for the host's next call when it has made calls before.
func parseAwaitHost(arg string) (method string, count int, err error) {
	f := strings.Fields(arg)
	switch len(f) {
	case 1:
		return f[0], 1, nil
	case 2:
		n, err := strconv.Atoi(f[1])
		if err != nil || n < 1 {
			return "", 0, fmt.Errorf("count %q: want a positive number", f[1])
		}
		return f[0], n, nil
	}
	return "", 0, fmt.Errorf("want METHOD [N]")
}

// recvMatches reports whether got is the message a recv of want takes:
// the same method, or both responses.
func recvMatches(want, got any) bool {
	if m := msgMethod(want); m != "" {
		return msgMethod(got) == m
	}
	return isResponseMsg(got)
}
