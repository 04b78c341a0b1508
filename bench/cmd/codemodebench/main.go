// Command codemodebench measures junction's code mode (docs/code-mode.md)
// against plain tool calls, as a model would see them, over a set of
// realistic multi-step tasks against real upstreams.
//
//	codemodebench [-junction BIN] [-echo BIN] [-node NODE] [-npm DIR] [-runs N] [-scale N] [-only NAME,...] [-show NAME] [-keep]
//
// Run from the repository root after scripts/setup, the defaults work:
// without -junction and -echo it builds ./cmd/junction and
// ./bench/cmd/echoserver into a temp directory (go must be on PATH:
// source scripts/lib/go.sh).
//
// It starts "junction serve" over stdio (-no-default-packs) with code
// mode on and four upstreams: the npm server-everything, server-filesystem
// (its root a temp directory seeded with 40 small text, Markdown, JSON and
// CSV files), server-memory (its file in the temp directory) and the
// bench echo server. -scale N multiplies the size of the seeded files
// and of the memory graph's observations (seed.go: N times the lines,
// rows, items and observations), with the same files, people, calls and
// rounds. Every task (tasks.go) is written twice:
//
//   - direct: the tools/call requests a host makes for a model, one
//     model turn (round) at a time; the Go code of the task does what the
//     model would do between turns (parse, filter, pick the next calls);
//   - script: one run_script call whose script does the same in the hub.
//
// Both must return the same answer, or the benchmark fails. The files and
// the memory graph are written afresh before each variant of each run.
//
// What is counted, per task, as entering the model's context:
//
//   - direct: the definition (tools/list JSON) of each tool the task
//     calls, every call as {"name", "arguments"} and every full result
//     (content, structuredContent, isError, as JSON);
//   - script: the run_script definition, what the real describe_tools
//     meta-tool gives for exactly the tools the script calls (the call
//     and its full result: each tool's definition and its one-line
//     TypeScript signature), the call {"name": "run_script",
//     "arguments": {"script"}} and its full result. describe_tools is
//     asked of the same hub started a second time in discovery search
//     mode (discovery: {mode: search}), where it serves the signatures.
//
// Two other accountings of the script variant's definitions are columns
// too: "signatures only" (the tools' typescript lines, without the rest of
// describe_tools' answer) and "with whole .d.ts" (the declarations
// resource junction://code-mode/NS.d.ts of each namespace the script
// uses, with the run_script definition of list mode, as earlier versions
// counted). A column "calls + results only" leaves definitions out.
//
// Each is counted in bytes and in cl100k_base tokens (the sum over the
// pieces). Rounds are the model turns that call tools: in the direct
// variant one per dependent step, calls that do not depend on each other
// being issued in one turn (and run in parallel); the script variant is
// one round. Wall time is the time in tool calls (the direct variant's
// rounds, the run_script call), the median of -runs runs; the model's own
// time per turn, the larger cost in practice, is not included.
//
// The output is a Markdown table, one row per task, then the totals and
// the targets: a median of ≥ 80% fewer bytes per task (under
// each accounting) and ≥ 3× fewer round trips (also counting a
// describe_tools turn before the script), each with whether this run
// meets it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/junction-mcp/junction/bench/tokens"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "codemodebench:", err)
		os.Exit(1)
	}
}

type options struct {
	junction, echo, node, npm string
	runs, scale               int
	only, show                string
	keep                      bool
}

// namespaces are the hub's servers, as configured.
var namespaces = []string{"everything", "files", "memory", "echo"}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("codemodebench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: codemodebench [flags]\n\n"+
			"Runs %d multi-step tasks against junction serve (code_mode: on) with server-everything,\n"+
			"server-filesystem, server-memory and the bench echo server, each as direct tool calls and as\n"+
			"one run_script call, checks both give the same answer, and prints a Markdown table of the\n"+
			"bytes and cl100k tokens entering the model's context, round trips and wall time.\n\nFlags:\n", len(tasks))
		fs.PrintDefaults()
	}
	var o options
	fs.StringVar(&o.junction, "junction", "", "the junction `binary` (default: go build ./cmd/junction into a temp dir)")
	fs.StringVar(&o.echo, "echo", "", "the bench echo server `binary` (default: go build ./bench/cmd/echoserver into a temp dir)")
	fs.StringVar(&o.node, "node", ".tools/node/bin/node", "node `binary`")
	fs.StringVar(&o.npm, "npm", ".tools/npm/node_modules", "node_modules `directory` holding @modelcontextprotocol/server-everything, server-filesystem and server-memory")
	fs.IntVar(&o.runs, "runs", 5, "runs of each variant of each task; wall times are their median")
	fs.IntVar(&o.scale, "scale", 1, "multiply the size of the seeded data by `N`: lines of notes, rows of sales CSVs, items of orders, groups of config settings, paragraphs of guides, observations of people in the memory graph (the files, people, calls and rounds stay the same; 1 is the data as documented)")
	fs.StringVar(&o.only, "only", "", "comma-separated task `names` to run (default: all)")
	fs.StringVar(&o.show, "show", "", "print what enters the model's context in both variants of task `name` (first run), then the table")
	fs.BoolVar(&o.keep, "keep", false, "keep the temp directory (config, files, memory, the hub's data)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.runs < 1 {
		return errors.New("-runs must be 1 or more")
	}
	if o.scale < 1 {
		return errors.New("-scale must be 1 or more")
	}
	todo, err := selectTasks(o.only)
	if err != nil {
		return err
	}
	tok, err := tokens.New()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "codemodebench")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintln(stderr, "codemodebench: keeping", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	if o.junction == "" {
		if o.junction, err = build(ctx, dir, "./cmd/junction"); err != nil {
			return err
		}
	}
	if o.echo == "" {
		if o.echo, err = build(ctx, dir, "./bench/cmd/echoserver"); err != nil {
			return err
		}
	}
	for _, p := range []*string{&o.junction, &o.echo, &o.node, &o.npm} {
		if *p, err = filepath.Abs(*p); err != nil {
			return err
		}
		if _, err := os.Stat(*p); err != nil {
			return err
		}
	}

	root := filepath.Join(dir, "files")
	if err := os.Mkdir(root, 0o755); err != nil {
		return err
	}
	if root, err = filepath.EvalSymlinks(root); err != nil { // the file server answers with real paths
		return err
	}
	e := &env{root: root, memFile: filepath.Join(dir, "memory.jsonl"), scale: o.scale}
	if err := e.reset(false); err != nil {
		return err
	}
	cfg := filepath.Join(dir, "junction.yaml")
	if err := os.WriteFile(cfg, []byte(config(o, e)), 0o644); err != nil {
		return err
	}
	h, err := startHub(ctx, o.junction, cfg, filepath.Join(dir, "data"))
	if err != nil {
		return err
	}
	defer h.close()
	if err := h.load(ctx, namespaces); err != nil {
		return err
	}
	described, sg, err := describeAll(ctx, o, e, dir, h, todo)
	if err != nil {
		return err
	}

	var results []result
	for _, t := range todo {
		fmt.Fprintf(stderr, "codemodebench: %s\n", t.name)
		var show io.Writer
		if t.name == o.show {
			show = stdout
		}
		r, err := measure(ctx, h, sg, described[t.name], e, t, o.runs, tok, show)
		if err != nil {
			return fmt.Errorf("task %s: %w", t.name, err)
		}
		results = append(results, r)
	}
	var base []time.Duration
	for range o.runs {
		sr, err := runScript(ctx, h, "return 1", nil)
		if err != nil {
			return fmt.Errorf("baseline script: %w", err)
		}
		base = append(base, sr.wall)
	}
	fmt.Fprintln(stdout, seedSummary(o.scale))
	fmt.Fprintln(stdout)
	report(stdout, results, o.runs, median(base))
	fmt.Fprintln(stdout)
	contextNote(stdout, h, sg, tok)
	return nil
}

// describeAll starts the same hub in discovery search mode (its own data
// directory; the upstreams are only listed, never called), asks its
// describe_tools for the signatures of the tools each task's script
// calls, and stops it again. It returns what describe_tools gave, by
// task, and the signer (its hub closed) for the summary of definitions.
func describeAll(ctx context.Context, o options, e *env, dir string, h *hub, todo []task) (map[string]described, *signer, error) {
	cfg := filepath.Join(dir, "junction-search.yaml")
	if err := os.WriteFile(cfg, []byte(config(o, e)+"discovery:\n  mode: search\n"), 0o644); err != nil {
		return nil, nil, err
	}
	sh, err := startHub(ctx, o.junction, cfg, filepath.Join(dir, "data-search"))
	if err != nil {
		return nil, nil, err
	}
	defer sh.close()
	var all []string
	for name := range h.defs {
		if name != scriptTool {
			all = append(all, name)
		}
	}
	slices.Sort(all)
	sg, err := loadSigner(ctx, sh, all)
	if err != nil {
		return nil, nil, err
	}
	out := map[string]described{}
	for _, t := range todo {
		d, err := sg.forScript(ctx, t.script)
		if err != nil {
			return nil, nil, fmt.Errorf("task %s: %w", t.name, err)
		}
		out[t.name] = d
	}
	return out, sg, nil
}

// selectTasks returns the tasks named in only (comma-separated), or all.
func selectTasks(only string) ([]task, error) {
	if only == "" {
		return tasks, nil
	}
	var out []task
	for n := range strings.SplitSeq(only, ",") {
		i := slices.IndexFunc(tasks, func(t task) bool { return t.name == n })
		if i < 0 {
			return nil, fmt.Errorf("no task %q", n)
		}
		out = append(out, tasks[i])
	}
	return out, nil
}

// build builds a package of the module into dir and returns the binary.
func build(ctx context.Context, dir, pkg string) (string, error) {
	out := filepath.Join(dir, "bin", filepath.Base(pkg))
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s (run from the repository root, with go on PATH, or give the binary): %w", pkg, err)
	}
	return out, nil
}

// config returns the hub's configuration: code mode on, four upstreams.
func config(o options, e *env) string {
	pkg := filepath.Join(o.npm, "@modelcontextprotocol")
	return fmt.Sprintf(`code_mode: on
servers:
  everything:
    command: %q
    args: [%q, stdio]
  files:
    command: %q
    args: [%q, %q]
  memory:
    command: %q
    args: [%q]
    env:
      MEMORY_FILE_PATH: %q
  echo:
    command: %q
`, o.node, filepath.Join(pkg, "server-everything", "dist", "index.js"),
		o.node, filepath.Join(pkg, "server-filesystem", "dist", "index.js"), e.root,
		o.node, filepath.Join(pkg, "server-memory", "dist", "index.js"), e.memFile,
		o.echo)
}

// A side is one variant's measures.
type side struct {
	// bytes, tokens: all that enters the context, definitions included.
	// For the script variant, its definitions are what describe_tools
	// gives for the tools the script calls (the call and its full result).
	bytes, tokens int
	// The script variant counted with only the signature lines of the
	// tools it calls (sig), or with the whole .d.ts of each namespace it
	// uses (dts), instead of the describe_tools call and result.
	sigBytes, sigTokens int
	dtsBytes, dtsTokens int
	traffic             int // bytes of the calls and results alone
	rounds, calls       int
	wall                time.Duration // median
}

// A result is one task's two variants.
type result struct {
	task           task
	direct, script side
	namespaces     []string // the script's
	tools          []string // the tools the script calls
}

// measure runs both variants of t runs times, checks their answers
// agree every time, and counts the context of the first run (the same in
// every run: the answers and the calls do not change).
// With show set, it prints the first run's context pieces there.
func measure(ctx context.Context, h *hub, sg *signer, d described, e *env, t task, runs int, tok *tokens.Counter, show io.Writer) (result, error) {
	r := result{task: t, tools: d.names}
	var dwall, swall []time.Duration
	script := strings.ReplaceAll(t.script, "@ROOT@", e.root)
	for i := range runs {
		if err := e.reset(t.memory); err != nil {
			return r, err
		}
		hs := newHost(ctx, h)
		answer, err := t.direct(hs, e)
		if err != nil {
			return r, fmt.Errorf("direct: %w", err)
		}
		if err := e.reset(t.memory); err != nil {
			return r, err
		}
		sr, err := runScript(ctx, h, script, namespaces)
		if err != nil {
			return r, fmt.Errorf("script: %w", err)
		}
		want, err := jsonOf(answer)
		if err != nil {
			return r, err
		}
		same, err := sameJSON(want, sr.value)
		if err != nil {
			return r, err
		}
		if !same {
			return r, fmt.Errorf("the answers differ (run %d):\n  direct: %s\n  script: %s", i+1, want, sr.value)
		}
		dwall, swall = append(dwall, hs.wall), append(swall, sr.wall)
		if i == 0 {
			r.direct = side{rounds: hs.rounds, calls: hs.calls}
			r.direct.bytes, r.direct.tokens = count(hs.context(), tok)
			r.direct.traffic, _ = count(hs.pieces, nil)
			traffic := sr.context[len(sr.context)-2:] // the run_script call and its result
			viaDescribe := append([][]byte{d.call, d.result, sg.scriptDef}, traffic...)
			sigOnly := append([][]byte{d.sigs, sg.scriptDef}, traffic...)
			r.script = side{rounds: 1, calls: sr.calls}
			r.script.bytes, r.script.tokens = count(viaDescribe, tok)
			r.script.sigBytes, r.script.sigTokens = count(sigOnly, tok)
			r.script.dtsBytes, r.script.dtsTokens = count(sr.context, tok)
			r.script.traffic, _ = count(traffic, nil)
			r.namespaces = sr.namespaces
			if show != nil {
				showContext(show, t.name+", direct", hs.context())
				showContext(show, t.name+", script (describe_tools of the tools it calls)", viaDescribe)
				showContext(show, t.name+", script (signatures only)", sigOnly)
				showContext(show, t.name+", script (with whole .d.ts)", sr.context)
			}
			if sr.calls != hs.calls {
				fmt.Fprintf(os.Stderr, "codemodebench: %s: %d calls direct, %d in the script\n", t.name, hs.calls, sr.calls)
			}
			if used := hs.usedNames(); !slices.Equal(used, d.names) {
				fmt.Fprintf(os.Stderr, "codemodebench: %s: tools called direct %v, in the script %v\n", t.name, used, d.names)
			}
		}
	}
	r.direct.wall, r.script.wall = median(dwall), median(swall)
	return r, nil
}

// count returns the bytes and cl100k tokens of pieces (no tokens
// without tok).
func count(pieces [][]byte, tok *tokens.Counter) (bytes, tokens int) {
	for _, p := range pieces {
		bytes += len(p)
		if tok != nil {
			tokens += tok.CL100k(p)
		}
	}
	return bytes, tokens
}

// showContext prints the pieces of one variant's context.
func showContext(w io.Writer, title string, pieces [][]byte) {
	fmt.Fprintf(w, "### %s\n\n", title)
	for i, p := range pieces {
		fmt.Fprintf(w, "--- piece %d, %d bytes\n%s\n", i+1, len(p), p)
	}
	fmt.Fprintln(w)
}

// contextNote prints the definitions each variant may read, per
// namespace: every tool's definition (tools/list JSON), every tool's
// signature line (describe_tools' typescript field), and the namespace's
// declarations resource; and the run_script definition.
func contextNote(w io.Writer, h *hub, sg *signer, tok *tokens.Counter) {
	fmt.Fprintln(w, "| definitions, bytes (tokens cl100k) | tools/list JSON | signature lines | NS.d.ts |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	for _, ns := range namespaces {
		var names []string
		for name := range h.defs {
			if strings.HasPrefix(name, ns+"__") {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		var defs, sigs []string
		for _, n := range names {
			defs = append(defs, string(h.defs[n]))
			sigs = append(sigs, sg.sig[n])
		}
		db, sb := []byte(strings.Join(defs, "")), []byte(strings.Join(sigs, "\n"))
		unit := "tools"
		if len(names) == 1 {
			unit = "tool"
		}
		fmt.Fprintf(w, "| %s: its %d %s | %d (%d) | %d (%d) | %d (%d) |\n", ns, len(names), unit,
			len(db), tok.CL100k(db), len(sb), tok.CL100k(sb), len(h.decl[ns]), tok.CL100k(h.decl[ns]))
	}
	b, sb := h.defs[scriptTool], sg.scriptDef
	fmt.Fprintf(w, "\nThe run_script definition: %d bytes (%d tokens) in list mode, %d (%d) in search mode.\n",
		len(b), tok.CL100k(b), len(sb), tok.CL100k(sb))
}
