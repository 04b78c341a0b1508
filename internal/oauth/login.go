package oauth

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// EnvHeadless set to 1 makes junction complete the authorization step
// without a person: it requests the authorization URL itself and takes
// the code from the redirect the authorization server answers with at
// once. Only test authorization servers (the conformance suite's) do
// that; a real one shows a login page, and the step fails.
const EnvHeadless = "JUNCTION_OAUTH_HEADLESS"

// HeadlessLogin is the [Login] of [EnvHeadless].
type HeadlessLogin struct {
	// Client makes the request; nil means a client of its own.
	Client *http.Client
}

const headlessRedirect = "http://127.0.0.1/callback"

func (HeadlessLogin) RedirectURL() string { return headlessRedirect }

func (l HeadlessLogin) Fetch(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if l.Client != nil {
		c.Transport = l.Client.Transport
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode < 300 || resp.StatusCode > 399 || !strings.HasPrefix(loc, headlessRedirect) {
		return nil, fmt.Errorf("headless OAuth login: the authorization server answered HTTP %d, not a redirect to %s (it wants a person: run junction auth login)", resp.StatusCode, headlessRedirect)
	}
	return resultFrom(loc)
}

func resultFrom(location string) (*auth.AuthorizationResult, error) {
	u, err := url.Parse(location)
	if err != nil {
		return nil, fmt.Errorf("OAuth redirect: %v", err)
	}
	q := u.Query()
	if e := q.Get("error"); e != "" {
		msg := e
		if d := q.Get("error_description"); d != "" {
			msg += ": " + d
		}
		return nil, fmt.Errorf("the authorization server refused: %s", msg)
	}
	if q.Get("code") == "" {
		return nil, errors.New("OAuth redirect without a code")
	}
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}

// LocalLogin is the [Login] a person runs: it listens on 127.0.0.1 for
// the redirect, prints the authorization URL and opens it in a browser
// where there is one. Only a redirect with the state of the request it
// is waiting for is taken; anything else gets 400. The listener starts
// when the flow first needs its redirect URL.
type LocalLogin struct {
	out  io.Writer
	open func(string) error

	once     sync.Once
	srv      *http.Server
	err      error
	redirect string
	results  chan callback
	state    chan string
}

type callback struct {
	res *auth.AuthorizationResult
	err error
}

// NewLocalLogin returns a login whose messages for the person go to out;
// open opens a URL in a browser (nil: [OpenBrowser]).
func NewLocalLogin(out io.Writer, open func(string) error) *LocalLogin {
	if open == nil {
		open = OpenBrowser
	}
	return &LocalLogin{out: out, open: open, results: make(chan callback, 1), state: make(chan string, 1)}
}

// start starts the redirect listener on 127.0.0.1, on a free port.
func (l *LocalLogin) start() {
	l.once.Do(func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			l.err = fmt.Errorf("OAuth redirect listener: %w", err)
			return
		}
		l.redirect = fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port)
		mux := http.NewServeMux()
		mux.HandleFunc("GET /callback", l.callback)
		l.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go l.srv.Serve(ln)
	})
}

func (l *LocalLogin) RedirectURL() string {
	l.start()
	if l.err != nil {
		return "http://127.0.0.1/callback"
	}
	return l.redirect
}

// Close stops the listener, if it started.
func (l *LocalLogin) Close() error {
	l.once.Do(func() { l.err = errors.New("the OAuth login is closed") })
	if l.srv == nil {
		return nil
	}
	return l.srv.Close()
}

func (l *LocalLogin) callback(w http.ResponseWriter, r *http.Request) {
	var want string
	select {
	case want = <-l.state:
	default:
		http.Error(w, "junction is not waiting for a login", http.StatusBadRequest)
		return
	}
	if r.URL.Query().Get("state") != want {
		l.state <- want // still waiting
		http.Error(w, "state does not match the login junction started", http.StatusBadRequest)
		return
	}
	res, err := resultFrom(r.URL.String())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err != nil {
		fmt.Fprintf(w, "<p>junction: the login failed: %s</p>", html.EscapeString(err.Error()))
	} else {
		fmt.Fprint(w, "<p>junction: logged in. You can close this window.</p>")
	}
	l.results <- callback{res, err}
}

func (l *LocalLogin) Fetch(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	if l.start(); l.err != nil {
		return nil, l.err
	}
	u, err := url.Parse(args.URL)
	if err != nil {
		return nil, err
	}
	select {
	case <-l.state:
	default:
	}
	l.state <- u.Query().Get("state")
	fmt.Fprintf(l.out, "Open this URL in a browser to log in:\n\n  %s\n\n", args.URL)
	if err := l.open(args.URL); err == nil {
		fmt.Fprintln(l.out, "(opened in your browser; waiting for the redirect)")
	}
	select {
	case r := <-l.results:
		return r.res, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the OAuth redirect: %w", ctx.Err())
	}
}

// OpenBrowser opens u in the desktop's browser, where there is one; it
// returns an error (and opens nothing) on a machine without a display.
func OpenBrowser(u string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", u)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	default:
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
			return errors.New("no display")
		}
		cmd = exec.Command("xdg-open", u)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}
