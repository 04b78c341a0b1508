package codemode

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/junction-mcp/junction/internal/sandbox"
)

// Scripts run in engine processes: this program started again (its
// package init sees engineArg and engineEnv and serves scripts on
// standard input and output), one script at a time each, a fresh engine
// for each script. A limit interrupts the engine, which stops within an
// instruction of JavaScript; a built-in that loops without running any
// (an array method over an array-like of length 2^53) does not look at
// the interrupt, and only ending its process stops it. The engine's
// process ends itself stuckGrace after such a limit (run.watch), and Run
// kills it when it has not answered by its wall time and three times
// that grace, or when the caller cancels. A process whose script ended
// well serves the next one: up to maxIdle wait for work.
//
// The protocol is one JSON object a line. Run sends {"start": ...},
// then {"settle": ...} as each inner call completes, and {"stop": true}
// when the wall time is up; the engine sends {"call": ...} for each
// inner call and ends with {"done": ...}. The inner calls run in Run's
// process, which holds the hub: the engine's process has the script and
// nothing else.
const (
	engineArg = "junction-script-engine"
	engineEnv = "JUNCTION_SCRIPT_ENGINE"
)

func init() {
	if len(os.Args) == 2 && os.Args[1] == engineArg && os.Getenv(engineEnv) == "1" {
		os.Exit(engineMain(os.Stdin, os.Stdout))
	}
}

// engineMain is what an engine process runs; the tests put engines that
// break the protocol in its place (and engineTestEnv in their
// environment) to check that Run holds its limits against them too.
var (
	engineMain    = serveEngine
	engineTestEnv []string
)

type toEngine struct {
	Start  *startMsg   `json:"start,omitempty"`
	Settle *completion `json:"settle,omitempty"`
	// Stop: the wall time is up. The engine's own clock ends a script
	// that is running; this ends one that is waiting for its calls,
	// as the engine's reads of its input have no deadline.
	Stop bool `json:"stop,omitempty"`
}

type startMsg struct {
	Script Script `json:"script"`
	Funcs  []Func `json:"funcs"`
	Limits Limits `json:"limits"`
}

type fromEngine struct {
	Call *callMsg `json:"call,omitempty"`
	Done *doneMsg `json:"done,omitempty"`
}

type callMsg struct {
	ID   int             `json:"id"`
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

// doneMsg is how the script ended: a value, or one of the errors Run
// returns (a limit, the script's own error, or a failure of the engine).
type doneMsg struct {
	Started bool            `json:"started,omitempty"`
	Value   json.RawMessage `json:"value,omitempty"`
	Console string          `json:"console,omitempty"`
	Skipped string          `json:"skipped,omitempty"`
	Limit   *LimitError     `json:"limit,omitempty"`
	Script  *ScriptError    `json:"script,omitempty"`
	Failure string          `json:"failure,omitempty"`
	// Ended: the process is ending (the engine did not stop).
	Ended bool `json:"ended,omitempty"`
	// Unconfined says why the process could not confine itself.
	Unconfined string `json:"unconfined,omitempty"`
}

func doneWith(value json.RawMessage, err error) *doneMsg {
	m := &doneMsg{Value: value}
	var le *LimitError
	var se *ScriptError
	switch {
	case err == nil:
	case errors.As(err, &le):
		m.Limit = le
	case errors.As(err, &se):
		m.Script = se
	default:
		m.Failure = err.Error()
	}
	return m
}

func (m *doneMsg) err() error {
	switch {
	case m.Limit != nil:
		return m.Limit
	case m.Script != nil:
		return m.Script
	case m.Failure != "":
		return errors.New(m.Failure)
	}
	return nil
}

// engineOut writes the engine's messages; the watchdog writes too.
type engineOut struct {
	mu  sync.Mutex
	enc *json.Encoder
}

// send writes one message. Run gone means nobody wants the script: the
// process ends.
func (o *engineOut) send(m fromEngine) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.enc.Encode(m); err != nil {
		os.Exit(1)
	}
}

// engineIn is what the engine's process reads: Run's messages.
type engineIn struct {
	dec *json.Decoder
	err error // once a read has failed, the input is not read again
}

// next reads the next message.
func (in *engineIn) next() (toEngine, error) {
	var m toEngine
	if in.err == nil {
		in.err = in.dec.Decode(&m)
	}
	return m, in.err
}

// errStop is Run's stop: the script's wall time is up.
var errStop = errors.New("stopped at the wall limit")

// settle reads up to the next settle, or Run's stop. Its input at an
// end (junction has gone, or closed it), nobody wants the script: the
// process ends.
func (in *engineIn) settle() (completion, error) {
	for {
		m, err := in.next()
		switch {
		case err != nil:
			os.Exit(0)
		case m.Stop:
			return completion{}, errStop
		case m.Settle != nil:
			return *m.Settle, nil
		}
	}
}

// serveEngine is the engine's process: it runs the scripts sent on in,
// one at a time, and reports on out, until in ends. It reads its input
// itself, between turns of the engine, so that a settle reaches the
// engine without a hand-off.
func serveEngine(r io.Reader, out io.Writer) int {
	// Confined before it reads a script: the process can compute on its
	// pipes and nothing else (no file, socket, program or other process).
	// The time zone is read first, as Date needs it.
	warmEngine()
	unconfined := ""
	if err := sandbox.Compute(); err != nil {
		unconfined = err.Error()
	}
	in := &engineIn{dec: json.NewDecoder(bufio.NewReaderSize(r, 64<<10))}
	w := &engineOut{enc: json.NewEncoder(out)}
	for first := true; ; first = false {
		m, err := in.next()
		if first && (err != nil && !errors.Is(err, io.EOF) || err == nil && m.Start == nil) {
			if err == nil {
				err = errors.New("the first message is not a start")
			}
			fmt.Fprintf(os.Stderr, "%s: this process runs code-mode scripts for junction, which starts it; it reads a start message on standard input (%v)\n", engineArg, err)
			return 2
		}
		if err != nil {
			return 0 // junction has gone, or has no more work for this process
		}
		if m.Start == nil {
			continue // a settle or a stop for the last script, which has ended
		}
		st := m.Start
		st.Limits = st.Limits.withDefaults()
		d := runScript(st.Script, st.Funcs, st.Limits, in, w)
		d.Unconfined = unconfined
		w.send(fromEngine{Done: d})
		if d.Ended {
			return 0
		}
	}
}

// Run runs one script to completion and returns its result. The error is
// a *ScriptError (the script's own fault), a *LimitError (it went over a
// limit), ErrCancelled wrapping ctx's cause, or another error for a
// failure of the engine itself. See Result for when it is non-nil.
func Run(ctx context.Context, s Script, env Env, lim Limits) (*Result, error) {
	lim = lim.withDefaults()
	start := time.Now()
	if env.Call == nil {
		env.Call = func(context.Context, string, json.RawMessage) (CallResult, error) {
			return CallResult{}, errors.New("no tools are available")
		}
	}
	e, err := takeEngine(startMsg{Script: s, Funcs: env.Funcs, Limits: lim})
	if err != nil {
		return nil, err
	}
	callCtx, cancel := context.WithCancel(ctx)
	sc := &script{env: env, lim: lim, ctx: callCtx, sem: make(chan struct{}, lim.Concurrent)}
	e.listen(sc)
	m, err := sc.serve(ctx, e)
	// Cancel the inner calls and wait for them: none outlives the script,
	// and none writes to the engine once it may have another.
	cancel()
	<-e.read
	sc.wg.Wait()
	e.release()

	if m == nil {
		m = &doneMsg{Started: true}
	}
	if m.Unconfined != "" && env.Logger != nil {
		unconfinedOnce.Do(func() {
			env.Logger.Warn("code mode: the script engine's process could not confine itself; scripts still run, with the limits, but a flaw in the engine would have this user's rights", "error", m.Unconfined)
		})
	}
	if m.Skipped != "" && env.Logger != nil {
		env.Logger.Warn("code mode: namespaces not bound, as they would hide a global of the engine; their tools are in tools[...]", "namespaces", m.Skipped)
	}
	if err == nil {
		err = m.err()
	}
	if !m.Started {
		return nil, err
	}
	res := &Result{Value: m.Value, Console: m.Console, Calls: sc.calls, Duration: time.Since(start)}
	if err != nil {
		res.Value = nil
	}
	return res, err
}

// unconfinedOnce: that engines run unconfined is said once.
var unconfinedOnce sync.Once

// engineStarted sees each engine process started (tests check that each
// has ended when they have).
var engineStarted = func(*os.Process) {}

// maxIdle is how many engine processes wait for work. Each holds about
// 25 MiB; one is enough for a host that runs one script at a time.
const maxIdle = 2

// idle are the engine processes waiting for a script.
var idle struct {
	mu sync.Mutex
	es []*engine
}

// engine is one engine process, as Run holds it. While it runs a script
// a goroutine reads its output (listen); an idle engine has none.
type engine struct {
	cmd  *exec.Cmd
	in   *os.File
	out  *os.File
	enc  *json.Encoder // Run's messages; the script's calls share it (script.mu)
	dec  *json.Decoder
	errs *os.File // its standard error, read when it has failed
	dead bool     // killed, or ending: not to be given another script
	left budget   // what it may still write for its script

	done chan *doneMsg // the script's end, if the engine told it
	read chan struct{} // closed when the reader has returned
}

// takeEngine gives an engine process that has taken the script: an idle
// one, or a new one.
func takeEngine(st startMsg) (*engine, error) {
	start := toEngine{Start: &st}
	for {
		idle.mu.Lock()
		var e *engine
		if n := len(idle.es); n > 0 {
			e, idle.es = idle.es[n-1], idle.es[:n-1]
		}
		idle.mu.Unlock()
		if e == nil {
			break
		}
		if e.enc.Encode(start) == nil {
			return e, nil
		}
		e.discard() // it died while idle
	}
	e, err := startEngine()
	if err != nil {
		return nil, err
	}
	if err := e.enc.Encode(start); err != nil {
		e.discard()
		return nil, fmt.Errorf("code mode: the script engine did not take the script: %w", err)
	}
	return e, nil
}

// release gives the engine back after its script: to wait for the next
// one, or to end.
func (e *engine) release() {
	if !e.dead {
		idle.mu.Lock()
		if len(idle.es) < maxIdle {
			idle.es = append(idle.es, e)
			e = nil
		}
		idle.mu.Unlock()
	}
	if e != nil {
		e.discard()
	}
}

// dropIdle ends the idle engine processes.
func dropIdle() {
	idle.mu.Lock()
	es := idle.es
	idle.es = nil
	idle.mu.Unlock()
	for _, e := range es {
		e.discard()
	}
}

// startEngine starts this program again as an engine.
func startEngine() (*engine, error) {
	self := "/proc/self/exe"
	if runtime.GOOS != "linux" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("code mode: finding this program to run the script engine: %w", err)
		}
		self = exe
	}
	cmd := exec.Command(self, engineArg)
	// The engine's process needs nothing of the hub's environment, and
	// gets none of its secrets: only the time zone (a script's Date
	// shows local time as the hub's would) and the Go runtime's settings.
	cmd.Env = []string{engineEnv + "=1"}
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "TZ", "GOCOVERDIR", "GODEBUG", "GOMAXPROCS", "GORACE":
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, engineTestEnv...)
	// Standard input and output block (see pipe); standard error is read
	// only after the process has failed, so that an engine holds no
	// goroutine while idle.
	var fs [6]*os.File // stdin's ends, stdout's, stderr's
	var err error
	for i := 0; i < 6 && err == nil; i += 2 {
		if i < 4 {
			fs[i], fs[i+1], err = pipe()
		} else {
			fs[i], fs[i+1], err = os.Pipe()
		}
	}
	if err == nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = fs[0], fs[3], fs[5]
		err = cmd.Start()
	}
	// The process has its own copies of its ends.
	for _, f := range []*os.File{fs[0], fs[3], fs[5]} {
		if f != nil {
			f.Close()
		}
	}
	if err != nil {
		for _, f := range []*os.File{fs[1], fs[2], fs[4]} {
			if f != nil {
				f.Close()
			}
		}
		return nil, fmt.Errorf("code mode: starting the script engine (%s): %w", self, err)
	}
	e := &engine{cmd: cmd, in: fs[1], out: fs[2], errs: fs[4]}
	e.enc = json.NewEncoder(e.in)
	e.left.r = e.out
	e.dec = json.NewDecoder(bufio.NewReaderSize(&e.left, 64<<10))
	engineStarted(cmd.Process)
	return e, nil
}

// listen reads what the engine writes for one script, up to its end: it
// starts each call the script makes.
//
// The engine is held to the script's limits here too, so that not even
// an engine that a flaw has put in a script's hands can pass them: it
// may ask for no more calls than the calls limit, and write no more than
// the arguments, the answer and the console can take (engineBudget).
// An engine that tries is killed.
func (e *engine) listen(sc *script) {
	e.done, e.read = make(chan *doneMsg, 1), make(chan struct{})
	e.left.n = engineBudget(sc.lim)
	go func() {
		defer close(e.read)
		for {
			var m fromEngine
			if err := e.dec.Decode(&m); err != nil {
				if errors.Is(err, errOverBudget) {
					sc.broke = fmt.Sprintf("it wrote more than the script's limits allow (%s)", byteSize(engineBudget(sc.lim)))
					e.cmd.Process.Kill() // serve, seeing the reader end, marks it dead
				}
				return
			}
			switch {
			case m.Done != nil:
				e.done <- m.Done
				return
			case m.Call != nil:
				if sc.calls == sc.lim.Calls {
					sc.broke = fmt.Sprintf("it asked for more calls than the calls limit (%d)", sc.lim.Calls)
					e.cmd.Process.Kill()
					return
				}
				sc.calls++
				sc.wg.Add(1)
				go sc.call(e, m.Call)
			}
		}
	}()
}

// engineBudget is the most an engine may write for one script within
// lim: its calls' arguments (the memory limit counts them), the answer
// and the console (the output limit, the console as JSON at worst six
// bytes a byte), and the messages' own members.
func engineBudget(lim Limits) int64 {
	return lim.Memory + 7*int64(lim.Output) + int64(lim.Calls)*256 + 64<<10
}

// errOverBudget: the engine wrote more than its budget.
var errOverBudget = errors.New("over budget")

// budget is a reader that fails once n bytes have been read.
type budget struct {
	r io.Reader
	n int64
}

func (b *budget) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, errOverBudget
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.r.Read(p)
	b.n -= int64(n)
	return n, err
}

// failure is what a process that ended without an answer wrote on its
// standard error (the last few KiB).
func (e *engine) failure() string {
	e.kill()
	e.cmd.Wait()
	b, _ := io.ReadAll(io.LimitReader(e.errs, 1<<20))
	if len(b) > 4<<10 {
		b = b[len(b)-4<<10:]
	}
	return strings.TrimSpace(string(b))
}

// kill ends the process; the reader, if any, then sees its output end.
func (e *engine) kill() {
	e.dead = true
	e.in.Close()
	e.cmd.Process.Kill()
}

// discard ends the process and waits for it.
func (e *engine) discard() {
	e.kill()
	e.cmd.Wait()
	e.out.Close()
	e.errs.Close()
}

// script is Run's side of one script: the inner calls.
type script struct {
	env   Env
	lim   Limits
	ctx   context.Context // the inner calls'
	sem   chan struct{}
	wg    sync.WaitGroup
	calls int    // the engine's reader's until it returns
	broke string // what the engine did against the protocol; the reader's until it returns

	mu        sync.Mutex // writing to the engine, and the count
	completed int
	progress  sync.Mutex // Progress, in the order of the count
}

// serve waits for the script's end. An error is Run's own (cancelled,
// or the engine failed); the script's outcome is in the message.
func (sc *script) serve(ctx context.Context, e *engine) (*doneMsg, error) {
	// The engine stops itself at its wall limit, and its process ends
	// stuckGrace later if the engine did not; this is for a process that
	// does neither.
	hard := time.NewTimer(sc.lim.Wall + 3*stuckGrace)
	defer hard.Stop()
	wall := time.NewTimer(sc.lim.Wall)
	defer wall.Stop()
	for {
		select {
		case <-wall.C:
			// The engine's own clock stops a script that is running;
			// one waiting for its calls waits on its input. The write
			// waits for a settle being written, which waits for the
			// engine to read: not serve, which must see the rest.
			sc.wg.Go(func() {
				sc.mu.Lock()
				defer sc.mu.Unlock()
				_ = e.enc.Encode(toEngine{Stop: true})
			})
			continue
		case <-e.read:
			select {
			case d := <-e.done:
				e.dead = e.dead || d.Ended
				return d, nil
			default:
			}
			if sc.broke != "" {
				e.failure()
				return nil, fmt.Errorf("code mode: the script engine's process was ended: %s", sc.broke)
			}
			err := fmt.Errorf("code mode: the script engine's process ended without an answer")
			if out := e.failure(); out != "" {
				err = fmt.Errorf("%w; it wrote: %s", err, out)
			}
			return nil, err
		case <-ctx.Done():
			e.kill()
			return nil, fmt.Errorf("%w: %w", ErrCancelled, context.Cause(ctx))
		case <-hard.C:
			e.kill()
			return &doneMsg{Started: true, Limit: &LimitError{Limit: LimitWall, Max: sc.lim.Wall.String(),
				Detail: "the script engine's process did not stop at the limit, so it was killed"}}, nil
		}
	}
}

// call runs one inner call on its own goroutine, waiting its turn under
// the concurrency limit, and sends the engine its outcome.
func (sc *script) call(e *engine, m *callMsg) {
	defer sc.wg.Done()
	c := completion{ID: m.ID}
	select {
	case sc.sem <- struct{}{}:
		res, err := sc.env.Call(sc.ctx, m.Tool, m.Args)
		<-sc.sem
		c.OK, c.Payload = callPayload(m.Tool, res, err)
	case <-sc.ctx.Done():
		c.Payload = errPayload(m.Tool, -32603, "cancelled: "+context.Cause(sc.ctx).Error())
	}
	sc.mu.Lock()
	sc.completed++
	n := sc.completed
	// An engine that has ended reads no more; its end is the reader's.
	_ = e.enc.Encode(toEngine{Settle: &c})
	sc.progress.Lock()
	sc.mu.Unlock()
	defer sc.progress.Unlock()
	if sc.env.Progress != nil {
		sc.env.Progress(n, m.Tool+" done")
	}
}

// callPayload is what the script's await gets: the structured content,
// else the content blocks, or the error.
func callPayload(tool string, res CallResult, err error) (bool, string) {
	if err != nil {
		code := -32603
		var ec interface{ ErrorCode() int }
		if errors.As(err, &ec) {
			code = ec.ErrorCode()
		}
		return false, errPayload(tool, code, err.Error())
	}
	if res.IsError {
		msg := res.Message
		if msg == "" {
			msg = contentText(res.Content)
		}
		if msg == "" {
			msg = "the tool reported an error"
		}
		return false, errPayload(tool, res.Code, msg)
	}
	if len(res.Structured) > 0 {
		return true, string(res.Structured)
	}
	if len(res.Content) > 0 {
		return true, string(res.Content)
	}
	return true, "[]"
}

func errPayload(tool string, code int, msg string) string {
	b, _ := json.Marshal(map[string]any{"message": msg, "code": code, "tool": tool})
	return string(b)
}

// contentText joins the text blocks of a content array.
func contentText(content json.RawMessage) string {
	var blocks []struct{ Type, Text string }
	if json.Unmarshal(content, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}
