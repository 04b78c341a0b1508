package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/junction-mcp/junction/internal/daemon"
)

// envReadyFD names the file descriptor on which a background run's child
// process reports that the run has started.
const envReadyFD = "JUNCTION_DIAGRAM_READY_FD"

// backgroundStartTimeout bounds the wait for a background child to
// report its run started (DiPeO waits 60s too).
const backgroundStartTimeout = 60 * time.Second

const diagramAbout = `
Diagrams are small workflows whose steps are the hub's tools (see
docs/diagrams.md). These commands work on the diagram store in the data
directory (-data-dir, default $XDG_STATE_HOME/junction), the same one
"junction serve -pack diagram" uses, so a diagram compiled here can be run
by a host, and a run started here can be read back by see_result.

Tool nodes can call the tools of every pack named with -pack (the core
pack is always there unless -no-default-packs). The config file's
packs.diagram.settings apply (-config): command nodes run only with
allow_commands: true or JUNCTION_DIAGRAM_ALLOW_COMMANDS=1, and http nodes
reach loopback and private addresses only when http_allow_hosts or
http_allow_cidrs names them.`

// diagramFlags are the flags every diagram subcommand takes.
type diagramFlags struct {
	hf hubFlags
	// out is JSON unless -o text: DiPeO's commands print JSON.
	out output
}

func (f *diagramFlags) register(env *Env, name, synopsis, about string) *flag.FlagSet {
	fs := newFlagSet(env, "diagram "+name, synopsis, strings.TrimSpace(about)+"\n"+diagramAbout)
	f.hf.register(fs)
	f.out.json = true
	registerOutput(fs, &f.out, false)
	return fs
}

// printRun prints a diagram run: as JSON, or in short for -o text.
func (f *diagramFlags) printRun(env *Env, r *daemon.DiagramRun) error {
	if f.out.json {
		return writeJSON(env.Stdout, r)
	}
	fmt.Fprintf(env.Stdout, "%s %s: %s\n", r.Diagram, r.SessionID, r.Status)
	if r.Output != nil {
		b, err := json.Marshal(r.Output)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "output: %s\n", b)
	}
	if r.Error != "" {
		fmt.Fprintf(env.Stdout, "error: %s\n", r.Error)
	}
	return nil
}

// open builds a hub with the requested packs and the diagram pack over
// the data directory; the config file's packs.diagram.settings apply.
func (f *diagramFlags) open(ctx context.Context, env *Env) (*daemon.Diagrams, error) {
	logger, err := f.hf.logger(env)
	if err != nil {
		return nil, err
	}
	cfg, _, err := f.hf.loadConfig(env)
	if err != nil {
		return nil, err
	}
	return daemon.OpenDiagrams(ctx, daemon.DiagramSpec{
		Packs: f.hf.packs, NoDefaultPacks: f.hf.noDefaultPacks, DataDir: f.hf.dataDir,
		Config: cfg, Logger: logger, Getenv: env.Getenv,
	})
}

func runDiagramCompile(ctx context.Context, env *Env, args []string) error {
	var f diagramFlags
	fs := f.register(env, "compile", "[flags] FILE", `
Validate a diagram file ("-" reads standard input) and print every problem
with its node id and field. With -push-as, a valid diagram is also saved
under that name. Exit status 1 means the diagram is not valid.`)
	pushAs := fs.String("push-as", "", "save the diagram under `name` if it is valid")
	light := fs.Bool("light", false, "the file is DiPeO's light format (version: light), as for dipeo compile --light; without it the format is detected")
	stdin := fs.Bool("stdin", false, "read the diagram from standard input (as FILE \"-\")")
	pos, err := parseInterspersed(env, fs, args)
	if err != nil {
		return err
	}
	if *stdin && len(pos) == 0 {
		pos = []string{"-"}
	}
	if len(pos) != 1 {
		return usageErrorf("diagram compile needs one FILE, got %d arguments", len(pos))
	}
	src, err := readLightFile(env, pos[0], *light)
	if err != nil {
		return err
	}
	ds, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer ds.Close()
	c, err := ds.Compile(src, *pushAs)
	if err != nil {
		return err
	}
	out := map[string]any{
		"valid":      c.Valid,
		"errors":     c.Errors,
		"warnings":   c.Warnings,
		"node_count": c.NodeCount,
		"edge_count": c.EdgeCount,
	}
	if c.PushedAs != "" {
		out["pushed_as"] = c.PushedAs
	}
	if f.out.json {
		if err := writeJSON(env.Stdout, out); err != nil {
			return err
		}
	} else {
		state := "valid"
		if !c.Valid {
			state = "invalid"
		}
		fmt.Fprintf(env.Stdout, "%s: %s, %d nodes, %d edges\n", pos[0], state, c.NodeCount, c.EdgeCount)
		for _, w := range c.Warnings {
			fmt.Fprintf(env.Stdout, "warning: %s\n", w)
		}
		if c.PushedAs != "" {
			fmt.Fprintf(env.Stdout, "saved as %s\n", c.PushedAs)
		}
	}
	if !c.Valid {
		for _, pr := range c.Errors {
			fmt.Fprintf(env.Stderr, "%s: %s\n", pos[0], pr)
		}
		return &ExitError{Code: 1}
	}
	return nil
}

func readDiagramFile(env *Env, path string) ([]byte, error) {
	var r io.Reader = env.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, 1<<20+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return b, nil
}

// lightFileName resolves a light diagram's path as DiPeO does, which
// lets the extension be left out: PATH, else PATH.light.yaml, else
// PATH.yaml.
func lightFileName(path string) string {
	for _, ext := range []string{"", ".light.yaml", ".yaml"} {
		if fi, err := os.Stat(path + ext); err == nil && fi.Mode().IsRegular() {
			return path + ext
		}
	}
	return path
}

// readLightFile reads a diagram file; with light, it must be DiPeO's
// light format.
func readLightFile(env *Env, path string, light bool) ([]byte, error) {
	src, err := readDiagramFile(env, path)
	if err != nil || !light || daemon.IsLightDiagram(src) {
		return src, err
	}
	return nil, usageErrorf("-light: %s is not a DiPeO light diagram (it has no version: light)", path)
}

// normFileName names a diagram file's run: its base name without .yaml.
func normFileName(path string) string {
	base := filepath.Base(path)
	for _, ext := range []string{".yaml", ".yml", ".json", ".light"} {
		base = strings.TrimSuffix(base, ext)
	}
	return base
}

// isDiagramFile tells a FILE argument from a saved diagram's NAME.
func isDiagramFile(arg string) bool {
	if arg == "-" || strings.ContainsAny(arg, `/\`) {
		return true
	}
	if _, err := os.Stat(arg); err == nil {
		return true
	}
	return false
}

func runDiagramRun(ctx context.Context, env *Env, args []string) error {
	var f diagramFlags
	fs := f.register(env, "run", "[flags] NAME|FILE", `
Run a saved diagram (NAME) or a diagram file (FILE, "-" for standard
input) and print the run: status, the endpoint's output, every node's
output. Exit status 1 means the run did not complete.

With -background the run goes on in a detached junction process; the
command prints its session id (exec_...) at once. Read the result with
"junction diagram results ID", or see_result from any host of a hub with
the same data directory.`)
	input := fs.String("input", "", "the run's input, a JSON `object`")
	background := fs.Bool("background", false, "run in a detached process and print the session id at once")
	timeout := fs.Duration("timeout", 0, "bound on the whole run (default 5m)")
	runID := fs.String("run-id", "", "internal: run id handed to a background child")
	light := fs.Bool("light", false, "the file is DiPeO's light format (version: light), as for dipeo run --light; FILE may leave out .light.yaml")
	pos, err := parseInterspersed(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("diagram run needs one NAME or FILE, got %d arguments", len(pos))
	}
	var in map[string]any
	if *input != "" {
		if err := json.Unmarshal([]byte(*input), &in); err != nil {
			return usageErrorf("-input: not a JSON object: %v", err)
		}
	}
	req := daemon.DiagramRunRequest{Input: in, Timeout: *timeout, ID: *runID}
	target := pos[0]
	if *light && target != "-" {
		target = lightFileName(target)
	}
	if isDiagramFile(target) || *light {
		src, err := readLightFile(env, target, *light)
		if err != nil {
			return err
		}
		req.Content = src
		if target != "-" {
			req.Name = normFileName(target)
		}
	} else {
		req.Diagram = target
	}
	if *background {
		if target == "-" {
			return usageErrorf("-background cannot read the diagram from standard input; save it with diagram compile -push-as first")
		}
		dir := f.hf.dataDir
		if dir == "" {
			dir = daemon.DefaultDataDir(env.Getenv)
		}
		return startBackground(ctx, env, args, target, dir, f.out.json)
	}

	ds, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer ds.Close()
	var run *daemon.DiagramRun
	if *runID != "" {
		run, err = runChild(ctx, env, ds, req)
	} else {
		run, err = ds.Run(ctx, req)
	}
	if err != nil {
		return err
	}
	if err := f.printRun(env, run); err != nil {
		return err
	}
	if run.Status != daemon.DiagramCompleted {
		return &ExitError{Code: 1, Err: fmt.Errorf("run %s %s: %s", run.SessionID, run.Status, run.Error)}
	}
	return nil
}

// runChild is the background child's side: start the run, tell the parent
// on the ready descriptor, then wait for the run to end.
func runChild(ctx context.Context, env *Env, ds *daemon.Diagrams, req daemon.DiagramRunRequest) (*daemon.DiagramRun, error) {
	var ready io.WriteCloser = nopWriteCloser{io.Discard}
	if fd, err := strconv.Atoi(env.Getenv(envReadyFD)); err == nil && fd > 2 {
		ready = os.NewFile(uintptr(fd), "ready")
	}
	run, err := ds.Start(req)
	if err != nil {
		json.NewEncoder(ready).Encode(map[string]string{"error": err.Error()})
		ready.Close()
		return nil, err
	}
	json.NewEncoder(ready).Encode(map[string]string{"session_id": run.SessionID, "status": "started"})
	ready.Close()
	if err := ds.Wait(ctx, run.SessionID); err != nil {
		// Interrupted: closing the hub records the run as failed.
		return nil, err
	}
	return ds.Result(context.WithoutCancel(ctx), run.SessionID)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// startBackground re-runs this command as a detached child process with
// a fresh run id, waits for it to report the run started, and prints
// {"session_id", "status": "started"}.
func startBackground(ctx context.Context, env *Env, args []string, target, dir string, asJSON bool) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("background run: finding the junction binary: %w", err)
	}
	id := daemon.NewDiagramRunID()
	childArgs := []string{"diagram", "run", "-run-id", id}
	for _, a := range args {
		if a == "-background" || a == "--background" || a == "-background=true" || a == "--background=true" {
			continue
		}
		if a == target && isDiagramFile(target) {
			if abs, err := filepath.Abs(target); err == nil {
				a = abs
			}
		}
		childArgs = append(childArgs, a)
	}
	logDir := filepath.Join(dir, "diagram-logs")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return fmt.Errorf("background run: %w", err)
	}
	logPath := filepath.Join(logDir, id+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("background run: %w", err)
	}
	defer logFile.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("background run: %w", err)
	}
	defer pr.Close()
	// The child outlives this command on purpose: it owns the run.
	cmd := exec.Command(exe, childArgs...)
	cmd.Env = append(slices.DeleteFunc(env.Environ(), func(kv string) bool { return strings.HasPrefix(kv, envReadyFD+"=") }), envReadyFD+"=3")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.ExtraFiles = []*os.File{pw}
	detach(cmd)
	if err := cmd.Start(); err != nil {
		pw.Close()
		return fmt.Errorf("background run: starting %s: %w", exe, err)
	}
	pw.Close()
	cmd.Process.Release()

	type answer struct {
		SessionID string `json:"session_id"`
		Status    string `json:"status"`
		Error     string `json:"error"`
	}
	got := make(chan answer, 1)
	go func() {
		var a answer
		line, err := bufio.NewReader(pr).ReadBytes('\n')
		if err != nil || json.Unmarshal(line, &a) != nil {
			a.Error = fmt.Sprintf("the background process exited before starting the run (see %s)", logPath)
		}
		got <- a
	}()
	timer := time.NewTimer(backgroundStartTimeout)
	defer timer.Stop()
	select {
	case a := <-got:
		if a.Error != "" {
			return errors.New(a.Error)
		}
		if !asJSON {
			_, err := fmt.Fprintf(env.Stdout, "started %s (log: %s)\n", a.SessionID, logPath)
			return err
		}
		return writeJSON(env.Stdout, map[string]string{"session_id": a.SessionID, "status": "started", "log": logPath})
	case <-timer.C:
		return fmt.Errorf("background execution start timed out after %s (see %s)", backgroundStartTimeout, logPath)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func runDiagramResults(ctx context.Context, env *Env, args []string) error {
	var f diagramFlags
	fs := f.register(env, "results", "[flags] ID", `
Print the run with session id ID (exec_ and 32 hex digits): its status
(running, completed, failed or cancelled), the nodes it ran, their outputs,
the endpoint's output and any error. Exit status 1 means the run failed or
was cancelled; 0 means it completed or is still running.`)
	pos, err := parseInterspersed(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("diagram results needs one ID, got %d arguments", len(pos))
	}
	ds, err := f.open(ctx, env)
	if err != nil {
		return err
	}
	defer ds.Close()
	run, err := ds.Result(ctx, pos[0])
	if err != nil {
		return err
	}
	if err := f.printRun(env, run); err != nil {
		return err
	}
	if run.Status == daemon.DiagramFailed || run.Status == daemon.DiagramCancelled {
		return &ExitError{Code: 1}
	}
	return nil
}
