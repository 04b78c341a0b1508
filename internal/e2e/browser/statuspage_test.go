//go:build linux

package browser

import (
	"bytes"
	"context"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The status page test drives a real headless Chromium (Debian's
// chromium, which scripts/setup installs) through the page of a stdio hub
// served by -admin: it logs in with the form, takes screenshots, and reads
// what the page shows while an upstream fails and after it recovers.
//
// JUNCTION_CHROMIUM names the browser (default /usr/bin/chromium, else
// chromium on PATH); JUNCTION_SCREENSHOTS, when set, is a directory that
// keeps the screenshots (status-connected.png, status-failed.png,
// status-recovered.png).

// chromium returns the browser to drive. Without one the test is skipped,
// unless JUNCTION_REQUIRE_TOOLS is set: then it fails.
func chromium(t *testing.T) string {
	t.Helper()
	path := os.Getenv("JUNCTION_CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
		if _, err := os.Stat(path); err != nil {
			if p, err := exec.LookPath("chromium"); err == nil {
				path = p
			}
		}
	}
	if _, err := os.Stat(path); err != nil {
		if os.Getenv(envRequireTools) != "" {
			t.Fatalf("chromium not found at %s (%v); scripts/setup installs it (apt-get install chromium), or set JUNCTION_CHROMIUM", path, err)
		}
		t.Skipf("chromium not found at %s; run scripts/setup, or set %s=1 to make this a failure", path, envRequireTools)
	}
	return path
}

// page is a logged-in browser tab on the status page.
type page struct {
	t    *testing.T
	ctx  context.Context
	base string
	dir  string // where screenshots go
}

// read loads the page and returns the text of the element with the id.
func (p *page) read(id string) string {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, chromedp.Navigate(p.base+"/"), chromedp.WaitVisible(chromedp.ID(id))); err != nil {
		p.t.Fatalf("opening the page: %v", err)
	}
	return p.text(id)
}

// waitFor reloads the page until the text of the element with the id
// contains every one of want, at most bound, and returns that text.
func (p *page) waitFor(id string, bound time.Duration, want ...string) string {
	p.t.Helper()
	deadline := time.Now().Add(bound)
	for {
		got := p.read(id)
		missing := ""
		for _, w := range want {
			if !strings.Contains(got, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return got
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the page did not show %q in #%s within %v; it reads:\n%s", missing, id, bound, got)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// text returns the text of the element with the id.
func (p *page) text(id string) string {
	p.t.Helper()
	s, err := chromedp.Run(p.ctx, chromedp.Text(chromedp.ID(id)))
	if err != nil {
		p.t.Fatalf("reading #%s: %v", id, err)
	}
	return s
}

// location returns the URL the tab shows.
func (p *page) location() string {
	p.t.Helper()
	u, err := chromedp.Run(p.ctx, chromedp.Location())
	if err != nil {
		p.t.Fatalf("reading the location: %v", err)
	}
	return u
}

// screenshot saves the whole page as name and checks it is a real image
// of the window's width.
func (p *page) screenshot(name string) {
	p.t.Helper()
	buf, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		p.t.Fatalf("screenshot %s is not a PNG: %v", name, err)
	}
	if b := img.Bounds(); b.Dx() != pageWidth || b.Dy() < 300 {
		p.t.Errorf("screenshot %s is %dx%d, want %d wide and at least 300 high", name, b.Dx(), b.Dy(), pageWidth)
	}
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot: %s (%d bytes)", path, len(buf))
}

const pageWidth = 1280

// TestStatusPageBrowser: "junction serve -admin" in stdio mode, a host on
// its stdin and stdout, and Chromium on its status page.
func TestStatusPageBrowser(t *testing.T) {
	browser := chromium(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()

	dir := t.TempDir()
	flag := filepath.Join(dir, "maintenance")
	cfg := writeConfig(t, filepath.Join(dir, "junction.yaml"), "servers:\n"+flakyServer(t, "flaky", flag))
	const token = "e2e-status-page-token"
	const prefix = "junction: status page on "
	stderr := newLineWatcher(prefix)
	host := connectStdioWatched(t, stderr, "-no-default-packs", "-config", cfg, "-admin", "127.0.0.1:0", "-token", token)
	var base string
	select {
	case line := <-stderr.found:
		base = strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(line, prefix)), "/")
	case <-ctx.Done():
		t.Fatalf("no %q line on stderr:\n%s", prefix, stderr.String())
	}
	waitFor(t, "flaky__echo", 30*time.Second, func() bool { return hasTool(t, host, "flaky__echo") })
	mustEcho(t, host, "flaky__echo", "before the page")

	// Without a session, a browser's request for the page is sent to the
	// login form, and curl gets 401: no page without the token.
	if code := getCode(t, base+"/status"); code != http.StatusUnauthorized {
		t.Errorf("GET /status without the token = %d, want 401", code)
	}

	shots := os.Getenv("JUNCTION_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		// Chromium's singleton socket goes in its temporary directory,
		// which it leaves when it is killed: the test's, not /tmp.
		chromedp.Env("TMPDIR="+t.TempDir()),
		chromedp.WindowSize(pageWidth, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(allocCtx)
	defer cancelTab()
	p := &page{t: t, ctx: tab, base: base, dir: shots}

	// Log in through the form, as a person would.
	if err := chromedp.Do(tab, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("token"))); err != nil {
		t.Fatalf("opening the page: %v", err)
	}
	if at := p.location(); at != base+"/login" {
		t.Errorf("the page sent the browser to %s, want %s/login", at, base)
	}
	if err := chromedp.Do(tab,
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.ID("sources")),
	); err != nil {
		t.Fatalf("logging in through the form: %v", err)
	}
	if at := p.location(); at != base+"/" {
		t.Errorf("after logging in the browser is at %s, want %s/", at, base)
	}
	if cookies, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.cookie`)); err != nil || cookies != "" {
		t.Errorf("document.cookie = %q (%v); the session cookie must be HttpOnly", cookies, err)
	}

	p.waitFor("state-flaky", 10*time.Second, "connected")
	p.waitFor("calls", 10*time.Second, "flaky__echo", "ok")
	if tools := p.text("tools"); !strings.Contains(tools, "flaky__crash") {
		t.Errorf("the tools section does not list flaky__crash:\n%s", tools)
	}
	p.screenshot("status-connected.png")

	// The upstream crashes and cannot start again.
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, failed := callTool(ctx, host, "flaky__crash", ""); !failed {
		t.Errorf("flaky__crash = %q, want a failure", got)
	}
	row := p.waitFor("source-flaky", 30*time.Second, "exit status 7", "down for maintenance")
	if state := p.text("state-flaky"); state == "connected" {
		t.Errorf("after the failure, flaky's state reads %q", state)
	}
	if !strings.Contains(row, "ago") {
		t.Errorf("the last error has no time:\n%s", row)
	}
	p.waitFor("calls", 10*time.Second, "flaky__crash", "source_unavailable")
	p.screenshot("status-failed.png")

	// It may start again: the hub's next attempt connects.
	if err := os.Remove(flag); err != nil {
		t.Fatal(err)
	}
	p.waitFor("state-flaky", 45*time.Second, "connected")
	row = p.text("source-flaky")
	if !strings.Contains(row, "exit status 7") {
		t.Errorf("after the recovery the last error is gone; it should stay, with its time:\n%s", row)
	}
	mustEcho(t, host, "flaky__echo", "after the recovery")

	// Two reloads: a preset added (applied), then a file that does not
	// parse (refused; the running config stays).
	servers := "servers:\n" + flakyServer(t, "flaky", flag)
	writeConfig(t, cfg, servers+"presets:\n  mine: [flaky__echo]\n")
	p.waitFor("reloads", 30*time.Second, "sections: presets", "ok")
	writeConfig(t, cfg, servers+"presets: [\n")
	reloads := p.waitFor("reloads", 30*time.Second, "refused", "running config is unchanged")
	if !strings.Contains(reloads, "sections: presets") {
		t.Errorf("the refused reload hid the earlier one:\n%s", reloads)
	}
	p.waitFor("state-flaky", 10*time.Second, "connected")
	p.screenshot("status-recovered.png")

	// Log out: the page asks for the token again.
	if err := chromedp.Do(tab,
		chromedp.Submit(chromedp.CSS(`form[action="/logout"] button`)),
		chromedp.WaitVisible(chromedp.ID("token")),
	); err != nil {
		t.Fatalf("logging out: %v", err)
	}
	if after := p.location(); after != base+"/login" {
		t.Errorf("after logout the browser is at %s, want %s/login", after, base)
	}
}
