package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/junction-mcp/junction/internal/files"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

const pushAbout = `
Upload LOCAL to a file listener ("junction files serve" or "diode files")
with HTTP PUT, streamed. Without :REMOTE the file keeps its base name.
Quote HOST:PORT:REMOTE as one argument; write IPv6 hosts in brackets
([::1]:8080:dir/file). A progress bar is drawn when stderr is a terminal.

Examples:
  junction files push ./site.tar.gz 127.0.0.1:8080
  junction files push ./a.txt 0xb6a7...e121.diode:8003:inbox/a.txt -socks5 127.0.0.1:1080`

func runPush(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "files push", "[flags] LOCAL HOST:PORT[:REMOTE]", pushAbout)
	var nf netFlags
	nf.register(fs, env)
	format := outputFlags(fs, false)
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	a := fs.Args()
	if len(a) > 2 {
		return usageErrorf("too many arguments (quote <peer>:<port>:<remote-path> as one token)")
	}
	if len(a) < 2 {
		return usageErrorf("usage: junction files push LOCAL HOST:PORT[:REMOTE]")
	}
	local := a[0]
	host, port, remote, err := parsePeerSpec(a[1])
	if err != nil {
		return usageErrorf("%v", err)
	}
	if remote == "" {
		remote = filepath.Base(local)
	}
	u, err := files.BuildURL(host, port, remote)
	if err != nil {
		return err
	}
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.IsDir() {
		return fmt.Errorf("%s is a directory", local)
	}
	bar := newBar(env, st.Size(), "push")
	body := &files.CountingReader{R: f, Progress: bar.set}
	c := &files.Client{Dial: nf.net.DialContext, Token: nf.net.Token}
	res, err := c.Put(ctx, u, body, st.Size(), "application/octet-stream", files.TransferTimeout)
	if err != nil || !res.OK() {
		bar.abandon() // a bar at 100% would say it went through
	} else {
		bar.finish()
	}
	if err != nil {
		return err
	}
	if !res.OK() {
		return fmt.Errorf("push failed: HTTP %d: %s", res.StatusCode, res.Message)
	}
	if format.json {
		return writeJSON(env.Stdout, transfer{Local: local, URL: u.String(), Bytes: st.Size()})
	}
	fmt.Fprintf(env.Stderr, "push ok: %s -> %s\n", local, u)
	return nil
}

const pullAbout = `
Download REMOTE from a file listener with HTTP GET, streamed to a temporary
file renamed into place when complete. LOCAL ending in / or naming an
existing directory receives the remote base name; otherwise LOCAL is the
file. Without LOCAL the file lands in the current directory.

Examples:
  junction files pull 127.0.0.1:8080:site.tar.gz
  junction files pull '[::1]:8080:logs/app.log' ./logs/`

func runPull(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "files pull", "[flags] HOST:PORT:REMOTE [LOCAL]", pullAbout)
	var nf netFlags
	nf.register(fs, env)
	format := outputFlags(fs, false)
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	a := fs.Args()
	if len(a) > 2 {
		return usageErrorf("too many arguments (quote <peer>:<port>:<remote-path> as one token)")
	}
	if len(a) < 1 {
		return usageErrorf("usage: junction files pull HOST:PORT:REMOTE [LOCAL]")
	}
	host, port, remote, err := parsePeerSpec(a[0])
	if err != nil {
		return usageErrorf("%v", err)
	}
	if remote == "" {
		return usageErrorf("expected host:port:remote_path (use [ipv6]:port:path for IPv6)")
	}
	local := "."
	if len(a) == 2 {
		local = a[1]
	}
	dst, err := files.ResolvePullDestination(local, remote)
	if err != nil {
		return err
	}
	u, err := files.BuildURL(host, port, remote)
	if err != nil {
		return err
	}
	c := &files.Client{Dial: nf.net.DialContext, Token: nf.net.Token}
	resp, done, err := c.Get(ctx, u, files.TransferTimeout)
	if err != nil {
		return err
	}
	defer done()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("pull failed: HTTP %d: %s", resp.StatusCode, files.Snippet(resp))
	}
	bar := newBar(env, resp.ContentLength, "pull")
	n, err := files.WriteFile(dst, &files.CountingReader{R: resp.Body, Progress: bar.set})
	if err != nil {
		bar.abandon()
		return err
	}
	bar.finish()
	if format.json {
		return writeJSON(env.Stdout, transfer{Local: dst, URL: u.String(), Bytes: n})
	}
	fmt.Fprintf(env.Stderr, "pull ok: %s -> %s (%d bytes)\n", u, dst, n)
	return nil
}

// transfer is "files push -o json" and "files pull -o json": the local
// file, the listener's URL of it, and the bytes sent or received.
type transfer struct {
	Local string `json:"local"`
	URL   string `json:"url"`
	Bytes int64  `json:"bytes"`
}

// parsePeerSpec splits HOST:PORT[:PATH] (IPv6 as [addr]:PORT[:PATH]) with
// the original's error texts. The path may contain colons.
func parsePeerSpec(spec string) (host string, port int, remote string, err error) {
	errForm := errors.New("expected host:port:remote_path (use [ipv6]:port:path for IPv6)")
	var portStr string
	if strings.HasPrefix(spec, "[") {
		i := strings.Index(spec, "]")
		if i < 0 {
			return "", 0, "", errForm
		}
		host = spec[1:i]
		rest, ok := strings.CutPrefix(spec[i+1:], ":")
		if !ok {
			return "", 0, "", errors.New("expected :port:path after IPv6")
		}
		portStr, remote, _ = strings.Cut(rest, ":")
	} else {
		parts := strings.SplitN(spec, ":", 3)
		if len(parts) < 2 {
			return "", 0, "", errForm
		}
		host, portStr = parts[0], parts[1]
		if len(parts) == 3 {
			remote = parts[2]
		}
	}
	if host == "" {
		return "", 0, "", errForm
	}
	port, err = strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, "", errors.New("invalid port")
	}
	return host, port, remote, nil
}

// bar is a progress bar on a terminal, and nothing otherwise. It draws
// nothing for the first barQuiet of a transfer: a rate measured over the
// first buffer's microseconds is absurd (hundreds of GB/s), and a short
// transfer needs no bar.
type bar struct {
	pb    *progressbar.ProgressBar
	w     io.Writer
	start time.Time
	shown bool
}

// barQuiet is how long a bar waits before its first frame.
const barQuiet = 300 * time.Millisecond

func newBar(env *Env, size int64, what string) *bar {
	f, ok := env.Stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return &bar{}
	}
	return &bar{w: f, start: time.Now(), pb: progressbar.NewOptions64(size,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowBytes(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetRenderBlankState(false),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(f) }),
	)}
}

func (b *bar) set(n int64) {
	if b.pb == nil || (!b.shown && time.Since(b.start) < barQuiet) {
		return
	}
	b.shown = true
	b.pb.Set64(n)
}

// finish shows the transfer complete, if the bar was drawn at all.
func (b *bar) finish() {
	if b.pb != nil && b.shown {
		b.pb.Finish()
	}
}

// abandon ends the bar where it stands, for a transfer that failed.
func (b *bar) abandon() {
	if b.pb != nil && b.shown {
		b.pb.Exit()
		fmt.Fprintln(b.w)
	}
}

var _ io.Reader = (*files.CountingReader)(nil)
