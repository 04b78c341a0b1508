// Command hostile is a stdio MCP server that tries to escape its sandbox,
// for internal/e2e's TestSandboxEscapes. Each tool makes one kind of
// attempt and answers with text that says what happened: "denied: ..."
// when the attempt failed, "ALLOWED: ..." when it worked (or, for the
// informational tools pids and env, what it saw). A tool never crashes
// the server: a memory bomb maps memory itself instead of growing Go's
// heap, a fork bomb is bounded and kills what it started.
//
// It speaks newline-delimited JSON-RPC 2.0 on stdin and stdout:
// initialize, ping, tools/list and tools/call. Standard library only.
//
// Started as "hostile ids" it prints its euid and capabilities and exits
// (exec_setuid runs a setuid copy of itself that way); as "hostile sleep"
// it blocks until killed.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "ids":
			fmt.Printf("euid=%d CapEff=%s NoNewPrivs=%s\n", os.Geteuid(), statusField("CapEff"), statusField("NoNewPrivs"))
			return
		case "sleep":
			for {
				time.Sleep(time.Hour)
			}
		}
	}
	serve(os.Stdin, os.Stdout)
}

type request struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func serve(in io.Reader, out io.Writer) {
	var mu sync.Mutex // one response line at a time
	send := func(id json.RawMessage, result any, rerr *rpcError) {
		msg := map[string]any{"jsonrpc": "2.0", "id": id}
		if rerr != nil {
			msg["error"] = rerr
		} else {
			msg["result"] = result
		}
		b, _ := json.Marshal(msg)
		mu.Lock()
		defer mu.Unlock()
		out.Write(append(b, '\n'))
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var wg sync.WaitGroup
	for sc.Scan() {
		var req request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil || req.Method == "" {
			continue // a response or garbage: nothing to answer
		}
		if len(req.ID) == 0 || string(req.ID) == "null" {
			continue // a notification (notifications/initialized, cancelled...)
		}
		switch req.Method {
		case "initialize":
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			json.Unmarshal(req.Params, &p)
			if p.ProtocolVersion == "" {
				p.ProtocolVersion = "2025-06-18"
			}
			send(req.ID, map[string]any{
				"protocolVersion": p.ProtocolVersion,
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]any{"name": "hostile", "version": "0.0.1"},
			}, nil)
		case "ping":
			send(req.ID, map[string]any{}, nil)
		case "tools/list":
			send(req.ID, map[string]any{"tools": toolList()}, nil)
		case "tools/call":
			wg.Add(1)
			go func(req request) {
				defer wg.Done()
				var p struct {
					Name      string         `json:"name"`
					Arguments map[string]any `json:"arguments"`
				}
				if err := json.Unmarshal(req.Params, &p); err != nil {
					send(req.ID, nil, &rpcError{Code: -32602, Message: err.Error()})
					return
				}
				tool, ok := tools[p.Name]
				if !ok {
					send(req.ID, nil, &rpcError{Code: -32602, Message: "unknown tool " + p.Name})
					return
				}
				text := run(tool, args(p.Arguments))
				send(req.ID, map[string]any{
					"content": []any{map[string]any{"type": "text", "text": text}},
					"isError": false,
				}, nil)
			}(req)
		default:
			send(req.ID, nil, &rpcError{Code: -32601, Message: "method not found: " + req.Method})
		}
	}
	wg.Wait()
}

// run calls a tool, turning a panic into a result.
func run(t tool, a args) (text string) {
	defer func() {
		if r := recover(); r != nil {
			text = fmt.Sprintf("denied: the tool panicked: %v", r)
		}
	}()
	return t.fn(a)
}

type args map[string]any

func (a args) str(k string) string { s, _ := a[k].(string); return s }

func (a args) num(k string, def int) int {
	switch v := a[k].(type) {
	case float64:
		return int(v)
	case string:
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

type tool struct {
	desc   string
	params []string // string parameters, all optional
	nums   []string // number parameters
	fn     func(args) string
}

var tools = map[string]tool{
	"read_file":    {"Read a file.", []string{"path"}, nil, readFile},
	"write_file":   {"Write a file.", []string{"path", "content"}, nil, writeFile},
	"connect":      {"TCP connect to addr (host:port), 2s timeout.", []string{"addr"}, nil, connect},
	"resolve":      {"Resolve a host name.", []string{"name"}, nil, resolve},
	"http_get":     {"GET a URL through HTTP_PROXY (when set).", []string{"url"}, nil, httpGet},
	"fork_bomb":    {"Start sleeping children until fork fails or max, then kill them.", nil, []string{"max"}, forkBomb},
	"mem_bomb":     {"Map and touch up to mb MiB, then release it.", nil, []string{"mb"}, memBomb},
	"ptrace":       {"PTRACE_ATTACH to pid.", nil, []string{"pid"}, ptrace},
	"kill":         {"Send signal 0 and SIGTERM to pid.", nil, []string{"pid"}, kill},
	"exec_setuid":  {"Run a setuid copy of this program; report its euid and capabilities.", []string{"path"}, nil, execSetuid},
	"proc_root":    {"Read through /proc/1/root and /proc/self/root (path: a file to read that way).", []string{"path"}, nil, procRoot},
	"proc_fd":      {"Read path through an O_PATH descriptor and /proc/self/fd.", []string{"path"}, nil, procFD},
	"symlink_race": {"In dir, race a symlink between a file there and target; read through it.", []string{"dir", "target"}, []string{"rounds"}, symlinkRace},
	"pids":         {"List the processes this server sees.", nil, nil, pids},
	"env":          {"Return the environment.", nil, nil, env},
}

func toolList() []any {
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []any
	for _, n := range names {
		t := tools[n]
		props := map[string]any{}
		for _, p := range t.params {
			props[p] = map[string]any{"type": "string"}
		}
		for _, p := range t.nums {
			props[p] = map[string]any{"type": "integer"}
		}
		out = append(out, map[string]any{
			"name": n, "description": t.desc,
			"inputSchema": map[string]any{"type": "object", "properties": props},
		})
	}
	return out
}

func denied(format string, a ...any) string  { return "denied: " + fmt.Sprintf(format, a...) }
func allowed(format string, a ...any) string { return "ALLOWED: " + fmt.Sprintf(format, a...) }

func clip(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	return strconv.Quote(string(b))
}

func readFile(a args) string {
	p := a.str("path")
	f, err := os.Open(p)
	if err != nil {
		return denied("%v", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		names, err := f.Readdirnames(100)
		if err != nil && !errors.Is(err, io.EOF) {
			return denied("readdir: %v", err)
		}
		return allowed("listed %s: %v", p, names)
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return denied("read: %v", err)
	}
	return allowed("read %d bytes of %s: %s", len(b), p, clip(b))
}

func writeFile(a args) string {
	p, content := a.str("path"), a.str("content")
	if content == "" {
		content = "pwned by hostile\n"
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		return denied("%v", err)
	}
	return allowed("wrote %d bytes to %s", len(content), p)
}

func connect(a args) string {
	c, err := net.DialTimeout("tcp", a.str("addr"), 2*time.Second)
	if err != nil {
		return denied("%v", err)
	}
	defer c.Close()
	return allowed("connected %s -> %s", c.LocalAddr(), c.RemoteAddr())
}

func resolve(a args) string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupHost(ctx, a.str("name"))
	if err != nil {
		return denied("%v", err)
	}
	return allowed("%s resolves to %v", a.str("name"), addrs)
}

// httpGet uses HTTP_PROXY for every URL when it is set. (Go's
// ProxyFromEnvironment never proxies loopback destinations, and the tests
// aim at loopback through the proxy.)
func httpGet(a args) string {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableKeepAlives = true
	if p := os.Getenv("HTTP_PROXY"); p != "" {
		pu, err := url.Parse(p)
		if err != nil {
			return denied("HTTP_PROXY %q: %v", p, err)
		}
		tr.Proxy = http.ProxyURL(pu)
	}
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	resp, err := c.Get(a.str("url"))
	if err != nil {
		return denied("%v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode >= 400 {
		return denied("status %s: %s", resp.Status, clip(b))
	}
	return allowed("status %s: %s", resp.Status, clip(b))
}

func forkBomb(a args) string {
	max := a.num("max", 100)
	if max > 5000 {
		max = 5000
	}
	prog, argv := "/bin/sleep", []string{"sleep", "1000"}
	if _, err := os.Stat(prog); err != nil {
		self, _ := os.Executable()
		prog, argv = self, []string{"hostile", "sleep"}
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return denied("opening %s: %v", os.DevNull, err)
	}
	defer devnull.Close()
	fd := devnull.Fd()
	var started []int
	var ferr error
	for len(started) < max {
		pid, err := syscall.ForkExec(prog, argv, &syscall.ProcAttr{Files: []uintptr{fd, fd, fd}})
		if err != nil {
			ferr = err
			break
		}
		started = append(started, pid)
	}
	for _, pid := range started {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, pid := range started {
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, 0, nil)
	}
	var lim syscall.Rlimit
	syscall.Getrlimit(rlimitNPROC, &lim)
	if ferr != nil {
		return denied("started=%d of max=%d, then fork failed: %v (RLIMIT_NPROC %d)", len(started), max, ferr, lim.Cur)
	}
	return allowed("started=%d of max=%d: no limit hit (RLIMIT_NPROC %d)", len(started), max, lim.Cur)
}

// memBomb maps anonymous private memory 16 MiB at a time and touches
// every page, so a limit shows as a failed mmap rather than a crash of Go's
// runtime.
func memBomb(a args) string {
	mb := a.num("mb", 512)
	const chunk = 16 << 20
	var maps [][]byte
	defer func() {
		for _, m := range maps {
			syscall.Munmap(m)
		}
	}()
	var merr error
	for len(maps)*16 < mb {
		m, err := syscall.Mmap(-1, 0, chunk, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err != nil {
			merr = err
			break
		}
		for i := 0; i < len(m); i += 4096 {
			m[i] = 1
		}
		maps = append(maps, m)
	}
	if merr != nil {
		return denied("allocated=%d MiB of %d, then mmap failed: %v", len(maps)*16, mb, merr)
	}
	return allowed("allocated=%d MiB of %d: no limit hit", len(maps)*16, mb)
}

func ptrace(a args) string {
	pid := a.num("pid", 1)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := syscall.PtraceAttach(pid); err != nil {
		return denied("PTRACE_ATTACH %d: %v", pid, err)
	}
	var ws syscall.WaitStatus
	syscall.Wait4(pid, &ws, syscall.WALL, nil)
	syscall.PtraceDetach(pid)
	return allowed("attached to pid %d", pid)
}

func kill(a args) string {
	pid := a.num("pid", 1)
	if pid <= 0 || pid == os.Getpid() {
		return denied("refusing pid %d (mine is %d)", pid, os.Getpid())
	}
	e0 := syscall.Kill(pid, 0)
	eterm := syscall.Kill(pid, syscall.SIGTERM)
	if e0 != nil && eterm != nil {
		return denied("pid %d: signal 0: %v; SIGTERM: %v", pid, e0, eterm)
	}
	return allowed("pid %d: signal 0: %v; SIGTERM: %v", pid, errString(e0), errString(eterm))
}

func errString(err error) string {
	if err == nil {
		return "delivered"
	}
	return err.Error()
}

// execSetuid runs path (a setuid copy of this program) as "path ids": it
// gains something when its euid differs from ours or it has any effective
// capability.
func execSetuid(a args) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, a.str("path"), "ids").CombinedOutput()
	if err != nil {
		return denied("exec %s: %v: %s", a.str("path"), err, clip(out))
	}
	line := strings.TrimSpace(string(out))
	var euid int
	var capEff, nnp string
	if _, err := fmt.Sscanf(line, "euid=%d CapEff=%s NoNewPrivs=%s", &euid, &capEff, &nnp); err != nil {
		return denied("unexpected output %s: %v", clip(out), err)
	}
	if euid != os.Geteuid() || strings.Trim(capEff, "0") != "" {
		return allowed("setuid child: %s (my euid %d)", line, os.Geteuid())
	}
	return denied("setuid gained nothing: %s (my euid %d)", line, os.Geteuid())
}

// procRoot tries the /proc magic links to the root of the init and of
// itself: list /proc/1/root, read /proc/1/root/etc/hostname, and read
// path through each of them.
func procRoot(a args) string {
	var got, failed []string
	try := func(what string, fn func() (string, error)) {
		s, err := fn()
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", what, err))
		} else {
			got = append(got, fmt.Sprintf("%s: %s", what, s))
		}
	}
	try("list /proc/1/root", func() (string, error) {
		ents, err := os.ReadDir("/proc/1/root")
		if err != nil {
			return "", err
		}
		var n []string
		for _, e := range ents {
			n = append(n, e.Name())
		}
		return strings.Join(n, ","), nil
	})
	paths := []string{"/proc/1/root/etc/hostname"}
	if p := a.str("path"); p != "" {
		paths = append(paths, "/proc/1/root"+p, "/proc/self/root"+p, "/proc/thread-self/root"+p, "/proc/1/cwd/"+filepath.Base(p))
	}
	for _, p := range paths {
		try("read "+p, func() (string, error) {
			b, err := os.ReadFile(p)
			return clip(b), err
		})
	}
	if len(got) > 0 {
		return allowed("%s (failed: %s)", strings.Join(got, "; "), strings.Join(failed, "; "))
	}
	return denied("%s", strings.Join(failed, "; "))
}

// procFD opens the directory of path (and /) with O_PATH, which Landlock
// does not check, and reads path relative to it, and through
// /proc/self/fd/N/..., and climbs from /proc/self/fd to /proc/1/root.
func procFD(a args) string {
	p := a.str("path")
	var got, failed []string
	readFD := func(what string, fd int, err error) {
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", what, err))
			return
		}
		f := os.NewFile(uintptr(fd), what)
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, 4096))
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: read: %v", what, err))
			return
		}
		got = append(got, fmt.Sprintf("%s: %s", what, clip(b)))
	}
	for _, dir := range []string{"/", filepath.Dir(p)} {
		dfd, err := syscall.Open(dir, oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err != nil {
			failed = append(failed, fmt.Sprintf("O_PATH %s: %v", dir, err))
			continue
		}
		rel, _ := filepath.Rel(dir, p)
		fd, err := syscall.Openat(dfd, rel, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		readFD(fmt.Sprintf("openat(O_PATH %s, %s)", dir, rel), fd, err)
		via := fmt.Sprintf("/proc/self/fd/%d/%s", dfd, rel)
		fd, err = syscall.Open(via, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		readFD("open "+via, fd, err)
		syscall.Close(dfd)
	}
	if pfd, err := syscall.Open("/proc/self/fd", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0); err != nil {
		failed = append(failed, fmt.Sprintf("open /proc/self/fd: %v", err))
	} else {
		fd, err := syscall.Openat(pfd, "../../1/root"+p, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		readFD("openat(/proc/self/fd, ../../1/root"+p+")", fd, err)
		syscall.Close(pfd)
	}
	if len(got) > 0 {
		return allowed("%s (failed: %s)", strings.Join(got, "; "), strings.Join(failed, "; "))
	}
	return denied("%s", strings.Join(failed, "; "))
}

// symlinkRace: in dir (which the server may write), a symlink and a hard
// link to target, then rounds of swapping a link between a harmless file
// and target while reading through it.
func symlinkRace(a args) string {
	dir, target := a.str("dir"), a.str("target")
	rounds := a.num("rounds", 2000)
	if rounds > 100000 {
		rounds = 100000
	}
	safe := filepath.Join(dir, "safe")
	if err := os.WriteFile(safe, []byte("safe\n"), 0o600); err != nil {
		return denied("cannot even write %s: %v", safe, err)
	}
	var leaks []string
	link := filepath.Join(dir, "link")
	os.Remove(link)
	if err := os.Symlink(target, link); err == nil {
		if b, err := os.ReadFile(link); err == nil {
			leaks = append(leaks, "plain symlink: "+clip(b))
		}
	}
	hard := filepath.Join(dir, "hard")
	os.Remove(hard)
	if err := os.Link(target, hard); err == nil {
		b, _ := os.ReadFile(hard)
		leaks = append(leaks, "hard link: "+clip(b))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tmp := filepath.Join(dir, "link.tmp")
		for i := 0; i < rounds; i++ {
			t := safe
			if i%2 == 0 {
				t = target
			}
			os.Remove(tmp)
			os.Symlink(t, tmp)
			os.Rename(tmp, link)
		}
	}()
	leaked, safeReads, failedReads := 0, 0, 0
	var sample string
	for i := 0; i < rounds; i++ {
		b, err := os.ReadFile(link)
		switch {
		case err != nil:
			failedReads++
		case string(b) == "safe\n":
			safeReads++
		default:
			leaked++
			sample = clip(b)
		}
	}
	<-done
	if leaked > 0 {
		leaks = append(leaks, fmt.Sprintf("race: %d of %d reads, e.g. %s", leaked, rounds, sample))
	}
	summary := fmt.Sprintf("rounds=%d leaked=%d safe=%d failed=%d", rounds, leaked, safeReads, failedReads)
	if len(leaks) > 0 {
		return allowed("%s: %s", summary, strings.Join(leaks, "; "))
	}
	return denied("%s", summary)
}

// pids lists the processes in /proc as pid:comm, with its own pid and
// parent's.
func pids(args) string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return denied("reading /proc: %v", err)
	}
	var seen []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		comm, _ := os.ReadFile("/proc/" + e.Name() + "/comm")
		seen = append(seen, e.Name()+":"+strings.TrimSpace(string(comm)))
	}
	return fmt.Sprintf("pid=%d ppid=%d count=%d procs=%s", os.Getpid(), os.Getppid(), len(seen), strings.Join(seen, ","))
}

func env(args) string {
	e := os.Environ()
	sort.Strings(e)
	return strings.Join(e, "\n")
}

func statusField(name string) string {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == name {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// oPath is O_PATH (0x200000 on every Linux architecture but alpha,
// parisc and sparc), which package syscall does not define.
const oPath = 0x200000

// rlimitNPROC is RLIMIT_NPROC (6 on x86 and arm), which package syscall
// does not define.
const rlimitNPROC = 6
