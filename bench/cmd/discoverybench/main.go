// Command discoverybench measures junction's discovery modes
// (docs/discovery.md) through the hub, over MCP, as a host sees them: the
// size of the first tools/list in list and in search mode, and the
// quality of search_tools over the tool-search benchmark
// (docs/performance.md, "Through the hub").
//
//	go build -o /tmp/junction ./cmd/junction
//	go build -o /tmp/catalogserver ./bench/cmd/catalogserver
//	discoverybench -junction /tmp/junction -fixture /tmp/catalogserver \
//	    -catalog catalog.json [-layout one|per-server] \
//	    [-queries queries-dev.json -ranked /tmp/hub-dev.jsonl [-score score.py]
//	     [-semantic http://127.0.0.1:PORT/v1 [-semantic-model use-lite]
//	      [-semantic-weight W] [-semantic-timeout D] [-semantic-wait 10m]]] \
//	    [-node node -npm node_modules]
//
// For each configuration it starts "junction serve" over stdio, once per
// mode, and reads the whole tools/list (every page) as a host does after
// initialize: tools, pages, bytes of the JSON-RPC responses, and tokens
// of the tools' JSON (the "tools" arrays) with the cl100k_base and
// o200k_base BPE encodings, embedded in the binary (no network). The
// configurations are
//
//   - catalog (-layout one): -fixture serving -catalog over stdio, the
//     only upstream, prefix never;
//   - catalog-per-server (-layout per-server, the default): "-fixture -http" serving
//     -catalog as one Streamable HTTP endpoint per catalog server, and the
//     hub with one upstream per endpoint (348 for the benchmark's
//     catalog), each named by its server part (package bench/catalog),
//     default prefix. Each upstream is then a source of the hub's search
//     index, with the catalog's server name as its title, and each tool is
//     indexed under its own name, as in a real hub of many upstreams;
//   - desktop, with -node and -npm (a node_modules directory): the npm
//     server-everything and server-filesystem (on an empty directory),
//     default prefixes.
//
// The hub runs with -no-default-packs, so only the upstreams' tools count.
// Both catalog layouts serve the tools under the same names,
// <server>__<tool>. Before it measures a catalog hub, it waits until the
// hub serves every catalog tool (at most 2 minutes: in list mode it lists
// again, in search mode it asks describe_tools), and reports on stderr
// how long after its start the hub answered the first tools/list and
// served them all; if the first tools/list came before, the list taken
// once they are all served is measured instead.
//
// With -queries and -ranked, the search-mode hub of the catalog is also
// asked search_tools {query, limit} for every query of the file (a JSON
// list of {id, query}), and the served names of the hits are mapped back
// to catalog keys (package bench/catalog): one {"id", "ranked"} line per
// query, the scorer's --ranked format. With -score it then runs
// "python3 SCORE --queries QUERIES --ranked RANKED" and prints its output.
//
// With -semantic, that search-mode hub also gets the semantic stage of
// tool search (docs/discovery.md, "The semantic stage"): the config's
// top-level discovery section names the endpoint (semantic.url), the
// -semantic-model name, and -semantic-weight and -semantic-timeout when
// they are given (else the hub's defaults). bench/embeddings is such an
// endpoint that runs offline. The hub then also serves its admin listener
// on a free loopback port (-admin 127.0.0.1:0 -insecure-no-auth), and
// before the queries the bench polls its /metrics until every catalog
// tool has its embedding (junction_search_semantic_tools: ready at
// least the catalog's tools, none pending), at most -semantic-wait after
// the hub started; it reports how long that took, and after the queries
// the stage's requests, failures and the searches that fell back to
// words only (a warning when there are any: those rankings are not the
// fused ones). The list-mode hub never gets the semantic stage.
package main

import (
	"cmp"
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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction/bench/catalog"
	"github.com/junction-mcp/junction/bench/tokens"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "discoverybench:", err)
		os.Exit(1)
	}
}

type options struct {
	junction, fixture, catalog string
	queries, ranked, score     string
	limit                      int
	node, npm                  string
	layout                     string
	semantic                   semantic
	semanticWait               time.Duration
}

// semantic is the semantic stage the search-mode hub of the catalog gets
// (docs/discovery.md, "The semantic stage"): none when url is "".
type semantic struct {
	url, model string
	weight     float64       // 0: the hub's default
	timeout    time.Duration // 0: the hub's default
}

// yaml returns the "semantic:" entry of the top-level "discovery:"
// section, indented under it, or "" when there is no stage.
func (s semantic) yaml() string {
	if s.url == "" {
		return ""
	}
	y := fmt.Sprintf("  semantic:\n    url: %q\n    model: %q\n", s.url, s.model)
	if s.weight != 0 {
		y += "    weight: " + strconv.FormatFloat(s.weight, 'g', -1, 64) + "\n"
	}
	if s.timeout != 0 {
		y += "    timeout: " + s.timeout.String() + "\n"
	}
	return y
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("discoverybench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.junction, "junction", "junction", "the junction `binary`")
	fs.StringVar(&o.fixture, "fixture", "", "the catalogserver `binary` (bench/cmd/catalogserver)")
	fs.StringVar(&o.catalog, "catalog", "", "the benchmark's catalog `file`")
	fs.StringVar(&o.layout, "layout", "per-server", "how the hub gets the catalog: `one` upstream of all tools, or per-server (one upstream per catalog server)")
	fs.StringVar(&o.queries, "queries", "", "a query `file` (JSON list of {id, query}) to run through search_tools")
	fs.StringVar(&o.ranked, "ranked", "", "with -queries: write the rankings (JSON lines) to `file`")
	fs.StringVar(&o.score, "score", "", "with -queries: run this scorer (score.py) on the rankings")
	fs.IntVar(&o.limit, "limit", 10, "search_tools' limit")
	fs.StringVar(&o.node, "node", "", "node `binary`, for the desktop configuration")
	fs.StringVar(&o.npm, "npm", "", "node_modules `directory` holding @modelcontextprotocol/server-everything and server-filesystem")
	fs.StringVar(&o.semantic.url, "semantic", "", "with -queries: give the search-mode hub this embeddings endpoint (`URL`, e.g. http://127.0.0.1:PORT/v1) as its semantic stage, and wait until every tool has its embedding before the queries")
	fs.StringVar(&o.semantic.model, "semantic-model", "use-lite", "with -semantic: the model `name` sent to the endpoint")
	fs.Func("semantic-weight", "with -semantic: the semantic ranking's `weight` against the lexical one's, above 0 and at most 10 (default: the hub's, 1)", func(v string) error {
		w, err := strconv.ParseFloat(v, 64)
		if err != nil || !(w > 0 && w <= 10) {
			return fmt.Errorf("%q: want a number above 0 and at most 10", v)
		}
		o.semantic.weight = w
		return nil
	})
	fs.Func("semantic-timeout", "with -semantic: the hub's `timeout` for each request to the endpoint (default: the hub's, 5s)", func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("%q: want a duration above 0, such as 30s", v)
		}
		o.semantic.timeout = d
		return nil
	})
	fs.DurationVar(&o.semanticWait, "semantic-wait", semanticWait, "with -semantic: wait at most this `long` after the hub starts for every tool's embedding")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.catalog == "" && o.node == "" {
		return errors.New("nothing to measure: give -catalog (and -fixture), or -node and -npm")
	}
	if (o.catalog == "") != (o.fixture == "") || (o.node == "") != (o.npm == "") {
		return errors.New("-catalog needs -fixture, and -node needs -npm")
	}
	if (o.queries == "") != (o.ranked == "") || o.queries != "" && o.catalog == "" {
		return errors.New("-queries needs -ranked and -catalog")
	}
	if o.layout != "one" && o.layout != "per-server" {
		return fmt.Errorf("-layout %q: want one or per-server", o.layout)
	}
	if o.semantic.url == "" {
		if err := noneSet(fs, "semantic-model", "semantic-weight", "semantic-timeout", "semantic-wait"); err != nil {
			return err
		}
	} else if o.queries == "" {
		return errors.New("-semantic needs -queries: it changes only search_tools' ranking")
	}
	if o.semantic.url != "" && (o.semantic.model == "" || o.semanticWait <= 0) {
		return errors.New("-semantic needs a -semantic-model name and a -semantic-wait above 0")
	}
	tok, err := tokens.New()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "discoverybench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	var rows []row
	if o.catalog != "" {
		tools, err := catalog.Load(o.catalog)
		if err != nil {
			return err
		}
		names, _, err := catalog.Names(tools)
		if err != nil {
			return err
		}
		name := "catalog"
		servers := fmt.Sprintf("  catalog:\n    command: %q\n    args: [-catalog, %q]\n    prefix: never\n", o.fixture, o.catalog)
		if o.layout == "per-server" {
			fx, err := startFixture(o.fixture, o.catalog)
			if err != nil {
				return err
			}
			defer fx.close()
			name = "catalog-per-server"
			if servers, err = perServer(fx.url, tools); err != nil {
				return err
			}
		}
		r, err := measure(ctx, o.junction, dir, name, servers, o.semantic, names, tok, stderr, func(h *hub) error {
			if o.queries == "" {
				return nil
			}
			if o.semantic.url != "" {
				if err := waitSemantic(ctx, h, len(names), o.semanticWait, stderr); err != nil {
					return err
				}
			}
			if err := searchAll(ctx, h, o, stderr); err != nil {
				return err
			}
			if o.semantic.url != "" {
				return semanticAfter(ctx, h, stderr)
			}
			return nil
		})
		if err != nil {
			return err
		}
		rows = append(rows, r...)
	}
	if o.node != "" {
		root := filepath.Join(dir, "files")
		if err := os.Mkdir(root, 0o755); err != nil {
			return err
		}
		pkg := filepath.Join(o.npm, "@modelcontextprotocol")
		servers := fmt.Sprintf("  everything:\n    command: %q\n    args: [%q, stdio]\n  files:\n    command: %q\n    args: [%q, %q]\n",
			o.node, filepath.Join(pkg, "server-everything", "dist", "index.js"),
			o.node, filepath.Join(pkg, "server-filesystem", "dist", "index.js"), root)
		r, err := measure(ctx, o.junction, dir, "desktop", servers, semantic{}, nil, tok, stderr, nil)
		if err != nil {
			return err
		}
		rows = append(rows, r...)
	}
	printTable(stdout, rows)
	if o.score != "" && o.queries != "" {
		cmd := exec.CommandContext(ctx, "python3", o.score, "--queries", o.queries, "--ranked", o.ranked)
		cmd.Stdout, cmd.Stderr = stdout, stderr
		fmt.Fprintf(stdout, "\n$ %s\n", strings.Join(cmd.Args, " "))
		return cmd.Run()
	}
	return nil
}

// A row is one configuration's first tools/list in one mode.
type row struct {
	config, mode string
	list         listing
	cl100k       int
	o200k        int
}

// measure starts a hub of servers (YAML under "servers:") in list mode,
// then in search mode, and measures each one's tools/list, once the hub
// serves every tool of want ([hub.ready]) if want is not nil. The
// search-mode hub gets the semantic stage sem, if any, and its admin
// listener. In search mode it then calls then, if not nil, with the hub.
func measure(ctx context.Context, junction, dir, name, servers string, sem semantic, want []string, tok *tokens.Counter, stderr io.Writer, then func(*hub) error) ([]row, error) {
	var rows []row
	for _, mode := range []string{"list", "search"} {
		modeSem := sem
		if mode != "search" {
			modeSem = semantic{}
		}
		cfg := filepath.Join(dir, name+"-"+mode+".yaml")
		if err := os.WriteFile(cfg, []byte(config(servers, mode, modeSem)), 0o644); err != nil {
			return nil, err
		}
		start := time.Now()
		h, err := startHub(ctx, junction, cfg, filepath.Join(dir, "data-"+name+"-"+mode), modeSem.url != "")
		if err != nil {
			return nil, err
		}
		l, err := h.listAll(ctx)
		if err == nil && want != nil {
			listed := time.Since(start)
			var late bool
			if l, late, err = h.ready(ctx, mode, want, l); err == nil {
				fmt.Fprintf(stderr, "%s, %s mode: first tools/list answered %v after the hub started, all %d tools served after %v\n",
					name, mode, listed.Round(time.Millisecond), len(want), time.Since(start).Round(time.Millisecond))
				if late {
					fmt.Fprintf(stderr, "%s, %s mode: the first tools/list came before every tool was served; measured a later one\n", name, mode)
				}
			}
		}
		if err == nil && mode == "search" && then != nil {
			err = then(h)
		}
		if cerr := h.close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("%s, %s mode: %w", name, mode, err)
		}
		r := row{config: name, mode: mode, list: l}
		for _, page := range l.toolsJSON {
			r.cl100k += tok.CL100k(page)
			r.o200k += tok.O200k(page)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// perServer returns the "servers:" entries of a hub of one upstream per
// catalog server: the catalogserver -http endpoint base/s/<part>, named
// <part> (catalog.Servers), default prefix, so that the hub serves each
// tool as <part>__<tool>, the name catalog.Names gives it.
func perServer(base string, tools []catalog.Tool) (string, error) {
	parts, err := catalog.Servers(tools)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	done := map[string]bool{}
	for _, t := range tools {
		p := parts[t.Server]
		if !done[p] {
			done[p] = true
			fmt.Fprintf(&b, "  %s:\n    transport: http\n    url: %q\n", p, base+"/s/"+p)
		}
	}
	return b.String(), nil
}

// config returns a config file of servers in the discovery mode, with
// the semantic stage sem, if any.
func config(servers, mode string, sem semantic) string {
	return "servers:\n" + servers + "discovery:\n  mode: " + mode + "\n" + sem.yaml()
}

// noneSet reports the first of the named flags that was set.
func noneSet(fs *flag.FlagSet, names ...string) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if err == nil && slices.Contains(names, f.Name) {
			err = fmt.Errorf("-%s needs -semantic", f.Name)
		}
	})
	return err
}

func printTable(w io.Writer, rows []row) {
	fmt.Fprintln(w, "| configuration | mode | tools | pages | bytes | tokens cl100k | tokens o200k | of list mode (bytes / tokens o200k) |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|")
	list := map[string]row{}
	for _, r := range rows {
		if r.mode == "list" {
			list[r.config] = r
		}
		l := list[r.config]
		fmt.Fprintf(w, "| %s | %s | %d | %d | %d | %d | %d | %s / %s |\n", r.config, r.mode, r.list.tools, len(r.list.toolsJSON),
			r.list.bytes, r.cl100k, r.o200k, share(r.list.bytes, l.list.bytes), share(r.o200k, l.o200k))
	}
}

// share returns n as a percentage of of.
func share(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100*float64(n)/float64(of))
}

// searchAll runs every query of o.queries through search_tools and writes
// the rankings, as catalog keys, to o.ranked.
func searchAll(ctx context.Context, h *hub, o options, stderr io.Writer) error {
	tools, err := catalog.Load(o.catalog)
	if err != nil {
		return err
	}
	_, keys, err := catalog.Names(tools)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(o.queries)
	if err != nil {
		return err
	}
	var qs []struct{ ID, Query string }
	if err := json.Unmarshal(b, &qs); err != nil {
		return fmt.Errorf("%s: %w", o.queries, err)
	}
	f, err := os.Create(o.ranked)
	if err != nil {
		return err
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	took := make([]time.Duration, 0, len(qs))
	for _, q := range qs {
		start := time.Now()
		res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": q.Query, "limit": o.limit}})
		took = append(took, time.Since(start))
		if err != nil {
			return fmt.Errorf("query %s: %w", q.ID, err)
		}
		ranked, err := rankedKeys(res, keys)
		if err != nil {
			return fmt.Errorf("query %s: %w", q.ID, err)
		}
		if err := enc.Encode(struct {
			ID     string   `json:"id"`
			Ranked []string `json:"ranked"`
		}{q.ID, ranked}); err != nil {
			return err
		}
	}
	slices.Sort(took)
	fmt.Fprintf(stderr, "%d search_tools calls through the hub: p50 %v, p99 %v\n", len(took), percentile(took, 50), percentile(took, 99))
	return f.Close()
}

// rankedKeys returns the catalog keys of a search_tools result's hits,
// in order; a name keys lacks is kept as it is (the scorer counts it as
// not in the catalog).
func rankedKeys(res *mcp.CallToolResult, keys map[string]string) ([]string, error) {
	if res.IsError {
		return nil, fmt.Errorf("search_tools: %s", resultText(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil, err
	}
	var sc struct {
		Tools []struct{ Name string }
	}
	if err := json.Unmarshal(b, &sc); err != nil {
		return nil, fmt.Errorf("search_tools structuredContent: %w", err)
	}
	ranked := make([]string, len(sc.Tools))
	for i, t := range sc.Tools {
		ranked[i] = cmp.Or(keys[t.Name], t.Name)
	}
	return ranked, nil
}

// percentile returns the p-th percentile of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}
