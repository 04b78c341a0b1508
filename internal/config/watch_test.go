package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// watchHarness runs a Watcher on a config file in a temp directory and
// collects its callbacks.
type watchHarness struct {
	t       *testing.T
	path    string
	sigs    chan os.Signal
	changes chan *Config
	errs    chan error
	done    chan error
	cancel  context.CancelFunc
}

func startWatcher(t *testing.T, initial string) *watchHarness {
	t.Helper()
	return startWatcherRelated(t, initial, nil)
}

// startWatcherRelated is startWatcher with a Watcher.Related.
func startWatcherRelated(t *testing.T, initial string, related func(*Config) []string) *watchHarness {
	t.Helper()
	dir := t.TempDir()
	h := &watchHarness{
		t:       t,
		path:    filepath.Join(dir, "junction.yaml"),
		sigs:    make(chan os.Signal, 1),
		changes: make(chan *Config, 10),
		errs:    make(chan error, 10),
		done:    make(chan error, 1),
	}
	if err := os.WriteFile(h.path, []byte(initial), 0o600); err != nil {
		t.Fatal(err)
	}
	cur, err := Load(h.path, nil)
	if err != nil {
		t.Fatalf("Load(initial): %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	h.cancel = cancel
	w := &Watcher{
		Path:     h.path,
		Signals:  h.sigs,
		Debounce: 50 * time.Millisecond,
		Current:  cur,
		OnChange: func(c *Config) error {
			if _, ok := c.Servers["reject"]; ok {
				return errors.New("rejected by the daemon")
			}
			h.changes <- c
			return nil
		},
		OnError: func(err error) { h.errs <- err },
		Related: related,
	}
	started := make(chan struct{})
	w.OnStart = func() { close(started) }
	go func() { h.done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-h.done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Watcher.Run = %v, want context.Canceled", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Watcher.Run did not return after cancel")
		}
	})
	// fsnotify registers the watches inside Run; a write before that would
	// be missed.
	select {
	case <-started:
	case err := <-h.done:
		t.Fatalf("Watcher.Run = %v before it started", err)
	}
	return h
}

// writeRenamed writes content the way vim and config managers do: a new
// file in the same directory, renamed over the old one.
func (h *watchHarness) writeRenamed(content string) {
	h.t.Helper()
	tmp := filepath.Join(filepath.Dir(h.path), ".junction.yaml.tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Rename(tmp, h.path); err != nil {
		h.t.Fatal(err)
	}
}

func (h *watchHarness) nextChange() *Config {
	h.t.Helper()
	select {
	case c := <-h.changes:
		return c
	case err := <-h.errs:
		h.t.Fatalf("OnError(%v), want OnChange", err)
	case <-time.After(5 * time.Second):
		h.t.Fatal("no OnChange within 5s")
	}
	return nil
}

func (h *watchHarness) nextError() error {
	h.t.Helper()
	select {
	case c := <-h.changes:
		h.t.Fatalf("OnChange(%v), want OnError", sortedKeys(c.Servers))
	case err := <-h.errs:
		return err
	case <-time.After(5 * time.Second):
		h.t.Fatal("no OnError within 5s")
	}
	return nil
}

// quiet checks that no callback arrives for a while.
func (h *watchHarness) quiet(d time.Duration) {
	h.t.Helper()
	select {
	case c := <-h.changes:
		h.t.Fatalf("unexpected OnChange(%v)", sortedKeys(c.Servers))
	case err := <-h.errs:
		h.t.Fatalf("unexpected OnError(%v)", err)
	case <-time.After(d):
	}
}

func TestWatcherRenameWrite(t *testing.T) {
	t.Parallel()
	h := startWatcher(t, "servers:\n  a: {command: x}\n")
	h.writeRenamed("servers:\n  a: {command: x}\n  b: {command: y}\n")
	c := h.nextChange()
	if got := sortedKeys(c.Servers); strings.Join(got, ",") != "a,b" {
		t.Errorf("new config servers = %v, want [a b]", got)
	}
	// An in-place write works too.
	if err := os.WriteFile(h.path, []byte("servers:\n  b: {command: y}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c = h.nextChange()
	if got := sortedKeys(c.Servers); strings.Join(got, ",") != "b" {
		t.Errorf("new config servers = %v, want [b]", got)
	}
}

func TestWatcherBadWrite(t *testing.T) {
	t.Parallel()
	h := startWatcher(t, "servers:\n  a: {command: x}\n")
	h.writeRenamed("servers:\n  a: {comand: x}\n")
	err := h.nextError()
	if want := `servers.a.comand: unknown key (did you mean "command"?)`; !strings.Contains(err.Error(), want) {
		t.Errorf("OnError(%v), want it to contain %q", err, want)
	}
	if !strings.Contains(err.Error(), h.path+":2:") {
		t.Errorf("OnError(%v), want it to name %s:2", err, h.path)
	}
	// Fixing the file delivers the fixed config.
	h.writeRenamed("servers:\n  a: {command: fixed}\n")
	if c := h.nextChange(); c.Servers["a"].Command != "fixed" {
		t.Errorf("command = %q, want fixed", c.Servers["a"].Command)
	}
}

func TestWatcherUnchangedBytes(t *testing.T) {
	t.Parallel()
	const content = "servers:\n  a: {command: x}\n"
	h := startWatcher(t, content)
	h.writeRenamed(content)
	h.quiet(300 * time.Millisecond)
}

func TestWatcherSignal(t *testing.T) {
	t.Parallel()
	h := startWatcher(t, "servers:\n  a: {command: x}\n")
	// A signal reloads even though the file did not change.
	h.sigs <- syscall.SIGHUP
	if c := h.nextChange(); c.Servers["a"].Command != "x" {
		t.Errorf("reloaded command = %q, want x", c.Servers["a"].Command)
	}
	// A signal with a broken file reports the error and delivers nothing.
	if err := os.WriteFile(h.path, []byte("servers: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.sigs <- syscall.SIGHUP
	if err := h.nextError(); !strings.Contains(err.Error(), "invalid YAML") {
		t.Errorf("OnError(%v), want invalid YAML", err)
	}
}

func TestWatcherMissingDir(t *testing.T) {
	t.Parallel()
	w := &Watcher{Path: filepath.Join(t.TempDir(), "nope", "junction.yaml")}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := w.Run(ctx); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run(missing dir) = %v, want a watch error", err)
	}
}

func TestWatcherSymlinkTarget(t *testing.T) {
	t.Parallel()
	real := filepath.Join(t.TempDir(), "real.yaml")
	if err := os.WriteFile(real, []byte("servers:\n  a: {command: x}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "junction.yaml")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	changes := make(chan *Config, 1)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	started := make(chan struct{})
	w := &Watcher{Path: link, Debounce: 50 * time.Millisecond, OnChange: func(c *Config) error { changes <- c; return nil },
		OnStart: func() { close(started) }}
	go func() { done <- w.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	<-started
	if err := os.WriteFile(real, []byte("servers:\n  b: {command: y}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-changes:
		if _, ok := c.Servers["b"]; !ok {
			t.Errorf("servers = %v, want b", sortedKeys(c.Servers))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no OnChange after writing the symlink's target")
	}
}

// TestWatcherRejected checks that a config the daemon could not apply is
// not taken as in force: writing the same bytes again retries it.
func TestWatcherRejected(t *testing.T) {
	t.Parallel()
	h := startWatcher(t, "servers:\n  a: {command: x}\n")
	h.writeRenamed("servers:\n  reject: {command: x}\n")
	if err := h.nextError(); err.Error() != "rejected by the daemon" {
		t.Errorf("OnError(%v), want the rejection", err)
	}
	h.writeRenamed("servers:\n  reject: {command: x}\n")
	if err := h.nextError(); err.Error() != "rejected by the daemon" {
		t.Errorf("OnError(%v) after the same bytes again, want the rejection again", err)
	}
}

// TestWatcherRelatedFile: a file the config depends on (the daemon's lock
// file), in another directory, is watched with the config: replacing it
// by rename, writing it in place and removing it each reload the config,
// unchanged as it is; writing the same bytes does not.
func TestWatcherRelatedFile(t *testing.T) {
	t.Parallel()
	lock := filepath.Join(t.TempDir(), "junction.lock.json")
	if err := os.WriteFile(lock, []byte("v1"), 0o600); err != nil {
		t.Fatal(err)
	}
	const content = "servers:\n  a: {command: x}\n"
	h := startWatcherRelated(t, content, func(*Config) []string { return []string{lock} })
	writeRenamed := func(data string) {
		t.Helper()
		tmp := lock + ".tmp"
		if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, lock); err != nil {
			t.Fatal(err)
		}
	}
	writeRenamed("v2")
	if c := h.nextChange(); c.Servers["a"].Command != "x" {
		t.Errorf("reloaded command = %q, want x", c.Servers["a"].Command)
	}
	writeRenamed("v2")
	h.quiet(300 * time.Millisecond)
	if err := os.WriteFile(lock, []byte("v3"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.nextChange()
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	h.nextChange()
	writeRenamed("v4")
	h.nextChange()
}

// TestWatcherRelatedRejected: a reload for a changed related file that the
// caller could not apply (a broken lock file) counts as not applied, and
// fixing the file reloads again.
func TestWatcherRelatedRejected(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lock := filepath.Join(dir, "junction.lock.json")
	if err := os.WriteFile(lock, []byte("good"), 0o600); err != nil {
		t.Fatal(err)
	}
	changes := make(chan string, 10)
	errs := make(chan error, 10)
	cur, err := Load(writeFile(t, filepath.Join(dir, "junction.yaml"), "servers:\n  a: {command: x}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	w := &Watcher{
		Path:     filepath.Join(dir, "junction.yaml"),
		Debounce: 50 * time.Millisecond,
		Current:  cur,
		Related:  func(*Config) []string { return []string{lock} },
		OnChange: func(*Config) error {
			b, _ := os.ReadFile(lock)
			if string(b) == "broken" {
				return errors.New("lock: broken")
			}
			changes <- string(b)
			return nil
		},
		OnError: func(err error) { errs <- err },
		OnStart: func() { close(started) },
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	<-started
	next := func() (string, error) {
		t.Helper()
		select {
		case s := <-changes:
			return s, nil
		case err := <-errs:
			return "", err
		case <-time.After(5 * time.Second):
			t.Fatal("no OnChange or OnError within 5s")
		}
		return "", nil
	}
	if err := os.WriteFile(lock, []byte("broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := next(); err == nil || err.Error() != "lock: broken" {
		t.Fatalf("after breaking the lock: OnError(%v), want the rejection", err)
	}
	if err := os.WriteFile(lock, []byte("fixed"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := next(); err != nil || got != "fixed" {
		t.Fatalf("after fixing the lock: OnChange(%q), OnError(%v); want OnChange(fixed)", got, err)
	}
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
