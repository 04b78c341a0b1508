package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/junction-mcp/junction/upstream"
)

// fixtures are one run's secrets and directories, made fresh for each
// sandbox, as internal/e2e's TestSandboxEscapes makes them.
type fixtures struct {
	base, home, sshKey, homeNote, oauthDir, tokens, outside, cfg, rw string
	hostile, setuid                                                  string
	secrets                                                          []string
	envSecret                                                        string
}

// fixtureDir holds each run's fixtures.
var fixtureDir = "/var/tmp"

func newFixtures(hostileSrc string) (*fixtures, error) {
	tag := make([]byte, 8)
	rand.Read(tag)
	t := hex.EncodeToString(tag)
	// Not under /tmp: srt's settings must leave /tmp readable (below).
	base, err := os.MkdirTemp(fixtureDir, "sandboxbench-escapes-")
	if err != nil {
		return nil, err
	}
	f := &fixtures{base: base, home: filepath.Join(base, "home"), oauthDir: filepath.Join(base, "oauth"), rw: filepath.Join(base, "rw")}
	f.sshKey = filepath.Join(f.home, ".ssh", "id_ed25519")
	f.homeNote = filepath.Join(f.home, "notes.txt")
	f.tokens = filepath.Join(f.oauthDir, "tokens.enc")
	f.outside = filepath.Join(base, "outside", "secret.txt")
	f.cfg = filepath.Join(base, "config", "junction.yaml")
	f.envSecret = "ENV-SECRET-" + t
	for path, secret := range map[string]string{
		f.sshKey: "SSH-PRIVATE-KEY-" + t, f.homeNote: "HOME-NOTE-" + t, f.tokens: "OAUTH-TOKENS-" + t,
		f.outside: "OUTSIDE-SECRET-" + t, f.cfg: "CONFIG-" + t,
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
			return nil, err
		}
		f.secrets = append(f.secrets, secret)
	}
	f.secrets = append(f.secrets, f.envSecret)
	if err := os.MkdirAll(f.rw, 0o700); err != nil {
		return nil, err
	}
	// The binary and a setuid copy, in a directory of their own (the
	// sandboxes may read it).
	bin := filepath.Join(base, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(hostileSrc)
	if err != nil {
		return nil, err
	}
	f.hostile, f.setuid = filepath.Join(bin, "hostile"), filepath.Join(bin, "hostile-setuid")
	for _, p := range []string{f.hostile, f.setuid} {
		if err := os.WriteFile(p, b, 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.Chmod(f.setuid, 0o755|os.ModeSetuid); err != nil {
		return nil, err
	}
	// Every directory on the way must be searchable for a run as another
	// user; the secrets stay 0600.
	for _, d := range []string{base, f.home, filepath.Dir(f.sshKey), f.oauthDir, filepath.Dir(f.outside), filepath.Dir(f.cfg), f.rw} {
		os.Chmod(d, 0o777)
	}
	return f, nil
}

// A result is what one attempt came to in one sandbox.
type result struct {
	verdict string // "stopped", "ESCAPED", "works" (a control), "BROKEN" (a control), "info", "not tried"
	detail  string
}

// An attempt is one row of the report.
type attempt struct {
	what string
	run  func(c *caller, f *fixtures) result
}

// caller calls the hostile server's tools through package upstream.
type caller struct {
	up      *upstream.Server
	f       *fixtures
	sandbox string
}

func (c *caller) call(tool string, args map[string]any) (string, error) {
	params, _ := json.Marshal(map[string]any{"name": tool, "arguments": args})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := c.up.CallToolRaw(ctx, tool, params)
	if err != nil && strings.Contains(err.Error(), "session ended") {
		// An earlier attempt ended the server (a signal to its sandbox's
		// init): once more, on the session package upstream restarts.
		if werr := c.up.WaitReady(ctx); werr == nil {
			res, err = c.up.CallToolRaw(ctx, tool, params)
		}
	}
	if err != nil {
		return "", err
	}
	var r struct {
		Content []struct{ Text string }
	}
	if err := json.Unmarshal(res, &r); err != nil || len(r.Content) == 0 {
		return "", fmt.Errorf("result %s", res)
	}
	return r.Content[0].Text, nil
}

// expectDenied makes an attempt that must fail: stopped when the server
// says "denied:" and no secret is in the answer.
func expectDenied(tool string, args map[string]any) func(*caller, *fixtures) result {
	return func(c *caller, f *fixtures) result {
		text, err := c.call(tool, args)
		return judge(f, text, err)
	}
}

func judge(f *fixtures, text string, err error) result {
	if err != nil {
		return result{"stopped", "the call failed: " + clip(err.Error())}
	}
	for _, s := range f.secrets {
		if strings.Contains(text, s) {
			return result{"ESCAPED", "leaked " + s[:strings.LastIndexByte(s, '-')] + ": " + clip(text)}
		}
	}
	if strings.HasPrefix(text, "denied:") {
		return result{"stopped", clip(strings.TrimPrefix(text, "denied: "))}
	}
	return result{"ESCAPED", clip(strings.TrimPrefix(text, "ALLOWED: "))}
}

func clip(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", "/")
	if len(s) > 110 {
		s = s[:110] + "…"
	}
	return s
}

// attempts are those of TestSandboxEscapes, in its order; paths are
// filled in from each run's fixtures.
func attempts(hubAddr, allowedAddr, allowedBody string) []attempt {
	_, hubPort, _ := net.SplitHostPort(hubAddr)
	me := os.Getpid()
	var as []attempt
	read := func(label string, path func(*fixtures) string) {
		as = append(as, attempt{"read " + label, func(c *caller, f *fixtures) result {
			return expectDenied("read_file", map[string]any{"path": path(f)})(c, f)
		}})
	}
	read("~/.ssh/id_ed25519", func(f *fixtures) string { return f.sshKey })
	read("~/.ssh (list)", func(f *fixtures) string { return filepath.Dir(f.sshKey) })
	read("a note in ~", func(f *fixtures) string { return f.homeNote })
	read("~ (list)", func(f *fixtures) string { return f.home })
	read("the token store", func(f *fixtures) string { return f.tokens })
	read("a file elsewhere", func(f *fixtures) string { return f.outside })
	read("the hub's config", func(f *fixtures) string { return f.cfg })
	read("/etc/hostname", func(*fixtures) string { return "/etc/hostname" })
	read("/proc/<hub>/environ", func(*fixtures) string { return fmt.Sprintf("/proc/%d/environ", me) })
	write := func(label string, path func(*fixtures) string) {
		as = append(as, attempt{"write " + label, func(c *caller, f *fixtures) result {
			p := path(f)
			was, _ := os.ReadFile(p)
			text, err := c.call("write_file", map[string]any{"path": p})
			now, _ := os.ReadFile(p)
			if string(now) != string(was) {
				return result{"ESCAPED", "changed on the host: " + clip(text)}
			}
			if err == nil && strings.HasPrefix(text, "ALLOWED:") {
				return result{"stopped", "the write went to a private copy, not the host's file: " + clip(strings.TrimPrefix(text, "ALLOWED: "))}
			}
			return judge(f, text, err)
		}})
	}
	write("~/.ssh/authorized_keys", func(f *fixtures) string { return filepath.Join(f.home, ".ssh", "authorized_keys") })
	write("~/.bashrc", func(f *fixtures) string { return filepath.Join(f.home, ".bashrc") })
	write("a new file elsewhere", func(f *fixtures) string { return filepath.Join(filepath.Dir(f.outside), "new.txt") })
	write("over the token store", func(f *fixtures) string { return f.tokens })
	write("in /tmp", func(f *fixtures) string {
		return filepath.Join(os.TempDir(), "sandboxbench-planted-"+filepath.Base(f.base))
	})
	write("beside its own binary", func(f *fixtures) string { return filepath.Join(filepath.Dir(f.hostile), "planted") })
	as = append(as, attempt{"control: write and read in the read-write dir", func(c *caller, f *fixtures) result {
		p := filepath.Join(f.rw, "inside.txt")
		text, err := c.call("write_file", map[string]any{"path": p, "content": "written from the sandbox"})
		got, _ := os.ReadFile(p)
		if err != nil || string(got) != "written from the sandbox" {
			return result{"BROKEN", fmt.Sprintf("%v %s", err, clip(text))}
		}
		text, err = c.call("read_file", map[string]any{"path": p})
		if err != nil || !strings.HasPrefix(text, "ALLOWED:") {
			return result{"BROKEN", fmt.Sprintf("read back: %v %s", err, clip(text))}
		}
		return result{"works", ""}
	}})
	for _, tool := range []string{"proc_root", "proc_fd"} {
		as = append(as, attempt{tool + " to a file elsewhere", func(c *caller, f *fixtures) result {
			return expectDenied(tool, map[string]any{"path": f.outside})(c, f)
		}})
		as = append(as, attempt{tool + " to ~/.ssh/id_ed25519", func(c *caller, f *fixtures) result {
			return expectDenied(tool, map[string]any{"path": f.sshKey})(c, f)
		}})
	}
	as = append(as, attempt{"symlink/hard link race to the key, the tokens, a file elsewhere", func(c *caller, f *fixtures) result {
		var details []string
		for _, target := range []string{f.sshKey, f.tokens, f.outside} {
			text, err := c.call("symlink_race", map[string]any{"dir": f.rw, "target": target, "rounds": 2000})
			r := judge(f, text, err)
			if r.verdict != "stopped" || !strings.Contains(text, "leaked=0") {
				return result{"ESCAPED", clip(text)}
			}
			details = append(details, r.detail)
		}
		return result{"stopped", details[0]}
	}})
	connect := func(label, addr string) {
		as = append(as, attempt{"connect " + label, expectDenied("connect", map[string]any{"addr": addr})})
	}
	connect("to the hub's port (127.0.0.1)", hubAddr)
	connect("to the allowed server, around the proxy", allowedAddr)
	connect("to 1.1.1.1:443", "1.1.1.1:443")
	connect("to the hub's port on [::1]", "[::1]:"+hubPort)
	as = append(as, attempt{"resolve a name (DNS exfiltration)", func(c *caller, f *fixtures) result {
		return expectDenied("resolve", map[string]any{"name": "exfil-" + filepath.Base(f.base) + ".example.com"})(c, f)
	}})
	as = append(as, attempt{"control: GET the allowed server through the proxy", func(c *caller, f *fixtures) result {
		text, err := c.call("http_get", map[string]any{"url": "http://" + allowedAddr + "/"})
		if err != nil || !strings.Contains(text, allowedBody) {
			return result{"BROKEN", fmt.Sprintf("%v %s", err, clip(text))}
		}
		return result{"works", ""}
	}})
	get := func(label, u string) {
		as = append(as, attempt{"proxy: " + label, expectDenied("http_get", map[string]any{"url": u})})
	}
	get("GET the hub's port", "http://"+hubAddr+"/healthz")
	get("CONNECT to the hub's port", "https://"+hubAddr+"/healthz")
	get("GET localhost:<hub port>", "http://localhost:"+hubPort+"/healthz")
	get("GET a host not listed", "http://example.com/")
	as = append(as, attempt{"see the host's processes (/proc)", func(c *caller, f *fixtures) result {
		text, err := c.call("pids", nil)
		if err != nil {
			return result{"stopped", err.Error()}
		}
		m := regexp.MustCompile(`^pid=(\d+) ppid=(\d+) count=(\d+) procs=(.*)$`).FindStringSubmatch(text)
		if m == nil {
			return result{"info", clip(text)}
		}
		var comms []string
		hub := false
		for _, pc := range strings.Split(m[4], ",") {
			_, comm, _ := strings.Cut(pc, ":")
			comms = append(comms, comm)
			if comm == "sandboxbench" {
				hub = true
			}
		}
		detail := fmt.Sprintf("sees %s processes (its pid %s, parent %s)", m[3], m[1], m[2])
		if len(comms) <= 8 {
			detail += ": " + strings.Join(comms, ", ")
		}
		if hub {
			return result{"ESCAPED", detail + ", the hub among them"}
		}
		return result{"stopped", detail}
	}})
	for _, tool := range []string{"ptrace", "kill"} {
		as = append(as, attempt{tool + " the hub's pid", expectDenied(tool, map[string]any{"pid": me})})
		as = append(as, attempt{tool + " pid 1", func(c *caller, f *fixtures) result {
			if c.sandbox == "none" {
				return result{"not tried", "pid 1 is the machine's init"}
			}
			before := c.up.Snapshot().PID
			text, err := c.call(tool, map[string]any{"pid": 1})
			r := judge(f, text, err)
			time.Sleep(500 * time.Millisecond)
			c.call("pids", nil) // restarts the server if the signal ended it
			if after := c.up.Snapshot().PID; tool == "kill" && after != before {
				r.detail += "; pid 1 is the sandbox's own init: the signal ended the sandbox and the server with it, nothing outside (the server was restarted)"
			}
			return r
		}})
	}
	as = append(as, attempt{"gain privileges through a setuid binary", func(c *caller, f *fixtures) result {
		return expectDenied("exec_setuid", map[string]any{"path": f.setuid})(c, f)
	}})
	as = append(as, attempt{"fork bomb (2000 children)", func(c *caller, f *fixtures) result {
		text, err := c.call("fork_bomb", map[string]any{"max": 2000})
		r := judge(f, text, err)
		if n := field(text, "started"); r.verdict == "stopped" && n >= 300 {
			r = result{"ESCAPED", "no bound below 300 tasks: " + r.detail}
		}
		return r
	}})
	as = append(as, attempt{"memory bomb (2 GiB)", func(c *caller, f *fixtures) result {
		text, err := c.call("mem_bomb", map[string]any{"mb": 2048})
		return judge(f, text, err)
	}})
	as = append(as, attempt{"read an undeclared secret variable", func(c *caller, f *fixtures) result {
		text, err := c.call("env", nil)
		if err != nil {
			return result{"stopped", err.Error()}
		}
		n := len(strings.Split(strings.TrimSpace(text), "\n"))
		if strings.Contains(text, f.envSecret) {
			return result{"ESCAPED", fmt.Sprintf("the whole environment (%d variables), the secret included", n)}
		}
		return result{"stopped", fmt.Sprintf("%d variables, the secret not among them", n)}
	}})
	return as
}

// show is a verdict as the report prints it.
func show(v string) string {
	if v == "ESCAPED" {
		return "not stopped"
	}
	return v
}

func field(text, name string) int {
	m := regexp.MustCompile(`\b` + name + `=(\d+)`).FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func escapes(argv []string) error {
	fs := flag.NewFlagSet("sandboxbench escapes", flag.ContinueOnError)
	hostile := fs.String("hostile", "", "the hostile server binary (go build ./internal/e2e/testdata/hostile)")
	srt := fs.String("srt", "", "sandbox-runtime's srt, to run the hostile server under it too")
	keep := fs.Bool("keep", false, "keep the fixtures and srt's settings files")
	if err := fs.Parse(argv); err != nil {
		return err
	}
	if *hostile == "" {
		return errors.New("escapes: -hostile is required")
	}
	// The hub's port: a listener in this process, as junction serve's.
	hubSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "the hub") }))
	defer hubSrv.Close()
	const allowedBody = "hello from the allowed server"
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, allowedBody) }))
	defer allowed.Close()
	hubAddr, allowedAddr := hubSrv.Listener.Addr().String(), allowed.Listener.Addr().String()
	as := attempts(hubAddr, allowedAddr, allowedBody)

	sandboxes := []string{"none", "junction strict"}
	if *srt != "" {
		sandboxes = append(sandboxes, "srt")
	}
	home := os.Getenv("HOME")
	defer os.Setenv("HOME", home)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	results := map[string][]result{}
	var settingsFile string
	for _, sb := range sandboxes {
		fmt.Fprintf(os.Stderr, "sandboxbench: escapes under %s ...\n", sb)
		f, err := newFixtures(*hostile)
		if err != nil {
			return err
		}
		if !*keep {
			defer os.RemoveAll(f.base)
		}
		os.Setenv("HOME", f.home)
		os.Setenv("SANDBOXBENCH_SECRET", f.envSecret)
		cfg := upstream.Config{Command: f.hostile}
		switch sb {
		case "junction strict":
			cfg.Sandbox = &upstream.Sandbox{Level: "strict", ReadWrite: []string{f.rw}, Network: []string{allowedAddr},
				Procs: 64, Memory: 256 << 20}
		case "srt":
			settingsFile = filepath.Join(f.base, "srt-settings.json")
			if err := writeSrtSettings(settingsFile, *srt, []string{filepath.Dir(f.hostile)}, []string{f.rw}, []string{allowedAddr}); err != nil {
				return err
			}
			cfg = upstream.Config{Command: *srt, Args: []string{"--settings", settingsFile, f.hostile}}
		}
		up, err := upstream.New("hostile", cfg, &upstream.Options{Logger: logger})
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err = up.WaitReady(ctx)
		cancel()
		if err != nil {
			up.Close()
			return fmt.Errorf("%s: %w", sb, err)
		}
		c := &caller{up: up, f: f, sandbox: sb}
		pid := up.Snapshot().PID
		for _, a := range as {
			r := a.run(c, f)
			results[sb] = append(results[sb], r)
		}
		if now := up.Snapshot().PID; now != pid {
			fmt.Fprintf(os.Stderr, "sandboxbench: under %s the server was restarted (pid %d, then %d): an attempt ended it\n", sb, pid, now)
		}
		up.Close()
		os.Remove(filepath.Join(os.TempDir(), "sandboxbench-planted-"+filepath.Base(f.base)))
	}
	if settingsFile != "" && *keep {
		fmt.Fprintln(os.Stderr, "sandboxbench: srt's settings:", settingsFile)
	}

	fmt.Print("| attempt |")
	for _, sb := range sandboxes {
		fmt.Printf(" %s |", sb)
	}
	fmt.Print("\n|---|")
	for range sandboxes {
		fmt.Print("---|")
	}
	fmt.Println()
	for i, a := range as {
		fmt.Printf("| %s |", a.what)
		for _, sb := range sandboxes {
			r := results[sb][i]
			if r.detail != "" {
				fmt.Printf(" **%s**: %s |", show(r.verdict), r.detail)
			} else {
				fmt.Printf(" **%s** |", show(r.verdict))
			}
		}
		fmt.Println()
	}
	fmt.Println()
	for _, sb := range sandboxes {
		stopped, escaped := 0, 0
		for _, r := range results[sb] {
			switch r.verdict {
			case "stopped":
				stopped++
			case "ESCAPED":
				escaped++
			}
		}
		fmt.Printf("- %s: %d stopped, %d not stopped\n", sb, stopped, escaped)
	}
	return nil
}
