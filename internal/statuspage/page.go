// Package statuspage is the hub's page for browsers: an HTML view of its
// sources, tools, recent calls and reloads, rendered on the server with
// html/template (no script, no front-end build), and the login that turns
// an API token into a browser session ([Auth]). The daemon fills [Data];
// this package knows nothing of how the hub works.
package statuspage

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed page.html login.html page.css
var files embed.FS

// The templates are parsed when first used, not at start: most runs of
// junction (a stdio hub, a CLI command) never show a page, and parsing
// costs hundreds of allocations that every start would pay.
var (
	pageTmpl = sync.OnceValue(func() *template.Template {
		return template.Must(template.New("page.html").Funcs(funcs).ParseFS(files, "page.html"))
	})
	loginTmpl = sync.OnceValue(func() *template.Template {
		return template.Must(template.New("login.html").ParseFS(files, "login.html"))
	})
	css, _ = files.ReadFile("page.css")
)

// CSP is the Content-Security-Policy of every page: nothing but the
// server's own stylesheet and form targets; no script, no frames.
const CSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// CSSPath is where [ServeCSS] is mounted.
const CSSPath = "/page.css"

// Data is what the page shows.
type Data struct {
	Version string
	Now     time.Time
	Started time.Time
	Config  string
	// Tools is how many tools the default view serves.
	Tools      int
	Sources    []Source
	Collisions []string
	Calls      []Call
	Reloads    []Reload
	// UserTokens are the users' own tokens for the servers with per-user
	// credentials (their state, never the token); nil when there are none.
	UserTokens []UserToken
	// Logout shows the Log out button (a server with auth).
	Logout bool
}

// UserToken is what the page shows of one user's token for one server.
type UserToken struct {
	Server  string    `json:"server"`
	User    string    `json:"user"`
	State   string    `json:"state"` // valid, expired, none
	Expiry  time.Time `json:"expiry,omitzero"`
	Refresh bool      `json:"refresh"` // the hub can refresh it
}

// Source is one source of tools.
type Source struct {
	Name  string
	Kind  string // pack, upstream or plugin
	State string
	PID   int
	// Since is when the current session started (zero unless connected).
	Since time.Time
	// Error is the last error; for a stdio server that exited it holds the
	// exit status and the last lines of its stderr.
	Error        string
	ErrorAt      time.Time
	BackoffUntil time.Time
	Connects     int
	// Drift summarises how the tools differ from the lock file or from
	// the server's previous list; empty when they do not.
	Drift string
	Tools []Tool
	// Sandbox is a stdio server's sandbox level (off, on, strict); empty
	// for other sources. SandboxEvents are its recent denials and
	// warnings, oldest first.
	Sandbox       string
	SandboxEvents []SandboxEvent
}

// SandboxEvent is something a sandboxed server was refused, or a layer of
// its sandbox that could not be applied.
type SandboxEvent struct {
	At   time.Time
	Text string
}

// Tool is one tool of a source, with its drift.
type Tool struct {
	Name string
	// Drift is "added" or "changed: FIELDS" when the tool drifted.
	Drift string
}

// funcs are the page template's helpers: counts of things, durations,
// times and the colour class of a state or a sandbox level.
var funcs = template.FuncMap{
	"count": count,
	"since": func(now, t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return roundDuration(now.Sub(t))
	},
	"until": func(now, t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return roundDuration(t.Sub(now))
	},
	"clock": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"sandboxClass": func(level string) string {
		switch level {
		case "strict", "on":
			return "sandbox-" + level
		}
		return "sandbox-off"
	},
	"stateClass": func(state string) string {
		switch state {
		case "connected", "ready":
			return "ok"
		case "failed":
			return "bad"
		}
		return "warn"
	},
	"ms": func(v float64) string {
		if v < 10 {
			return fmt.Sprintf("%.2f ms", v)
		}
		return fmt.Sprintf("%.0f ms", v)
	},
}

// count is n with the noun that goes with it: "1 tool", "0 tools",
// "2 tools".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func roundDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
}

// Render writes the page for d. It is written whole or not at all: a
// template error answers 500 instead of half a page.
func Render(w http.ResponseWriter, d Data) {
	var b bytes.Buffer
	if err := pageTmpl().Execute(&b, d); err != nil {
		http.Error(w, "status page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	pageHeaders(w)
	w.Write(b.Bytes())
}

func writeLogin(w http.ResponseWriter, code int, msg string) {
	var b bytes.Buffer
	if err := loginTmpl().Execute(&b, struct{ Message string }{msg}); err != nil {
		http.Error(w, "login page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	pageHeaders(w)
	w.WriteHeader(code)
	w.Write(b.Bytes())
}

// pageHeaders sets the headers of every HTML answer.
func pageHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// ServeCSS serves the page's stylesheet; it holds nothing secret, so it
// needs no login (the login form uses it).
func ServeCSS(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "max-age=300")
	w.Write(css)
}

// WantsHTML reports whether r is a browser's request for a page: its
// Accept header names text/html. curl, Prometheus and scripts send none
// or */*, and get the plain-text index instead.
func WantsHTML(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "text/html" {
			return true
		}
	}
	return false
}
