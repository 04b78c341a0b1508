// Command toolsearch runs junction's tool search (internal/toolsearch)
// over a benchmark catalog, for the scorer of the tool-search benchmark
// (docs/performance.md, "Tool search").
//
//	toolsearch -catalog catalog.json < query.txt
//	toolsearch -catalog catalog.json -queries queries-dev.json -ranked out.jsonl
//
// The catalog is a JSON list of {server, name, description, inputSchema};
// a tool's key is server + "/" + name. Each server becomes a source of
// the index and each tool is indexed under its key, so hits are keys.
//
// With no -queries it reads one query from stdin and prints the ranked
// keys, best first, one a line (score.py's --cmd mode). With -queries it
// runs every query of the file (a JSON list of {id, query, ...}) and
// writes one {"id", "ranked"} line per query to -ranked (score.py's
// --ranked mode), which is a thousand times faster than a process per
// query.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/junction-mcp/junction/internal/toolsearch"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "toolsearch:", err)
		os.Exit(1)
	}
}

type catalogTool struct {
	Server      string          `json:"server"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

type query struct {
	ID    string `json:"id"`
	Query string `json:"query"`
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("toolsearch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	catalog := fs.String("catalog", "", "the catalog (JSON list of {server, name, description, inputSchema})")
	queries := fs.String("queries", "", "a query file (JSON list of {id, query}); without it, one query is read from stdin")
	ranked := fs.String("ranked", "", "with -queries: where to write the rankings (JSON lines); - for stdout")
	limit := fs.Int("limit", 10, fmt.Sprintf("hits per query, 1 to %d", toolsearch.MaxLimit))
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *catalog == "" {
		return errors.New("-catalog is required")
	}
	x, err := load(*catalog)
	if err != nil {
		return err
	}
	if *queries == "" {
		q, err := io.ReadAll(io.LimitReader(stdin, toolsearch.MaxQueryBytes+1))
		if err != nil {
			return err
		}
		res, err := x.Search(strings.TrimSpace(string(q)), toolsearch.SearchOptions{Limit: *limit})
		if err != nil {
			return err
		}
		w := bufio.NewWriter(stdout)
		for _, h := range res.Hits {
			fmt.Fprintf(w, "%s\t%.3f\n", h.Name, h.Score)
		}
		return w.Flush()
	}
	if *ranked == "" {
		return errors.New("-queries needs -ranked")
	}
	var qs []query
	b, err := os.ReadFile(*queries)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &qs); err != nil {
		return fmt.Errorf("%s: %w", *queries, err)
	}
	out := stdout
	if *ranked != "-" {
		f, err := os.Create(*ranked)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	start := time.Now()
	for _, q := range qs {
		res, err := x.Search(q.Query, toolsearch.SearchOptions{Limit: *limit})
		if err != nil {
			return fmt.Errorf("query %s: %w", q.ID, err)
		}
		keys := make([]string, len(res.Hits))
		for i, h := range res.Hits {
			keys[i] = h.Name
		}
		if err := enc.Encode(struct {
			ID     string   `json:"id"`
			Ranked []string `json:"ranked"`
		}{q.ID, keys}); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "%d queries over %d tools in %v\n", len(qs), x.Len(), time.Since(start).Round(time.Millisecond))
	if err := w.Flush(); err != nil {
		return err
	}
	if f, ok := out.(*os.File); ok && out != stdout {
		return f.Close()
	}
	return nil
}

// load builds an index of the catalog: one source per server, in the
// catalog's order, each tool under its key.
func load(path string) (*toolsearch.Index, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var tools []catalogTool
	if err := json.Unmarshal(b, &tools); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var order []string
	by := map[string][]toolsearch.Tool{}
	for _, t := range tools {
		if _, ok := by[t.Server]; !ok {
			order = append(order, t.Server)
		}
		by[t.Server] = append(by[t.Server], toolsearch.Tool{
			Name:        t.Server + "/" + t.Name,
			LocalName:   t.Name,
			Description: t.Description,
			InputSchema: t.InputSchema,
		})
	}
	x := toolsearch.New()
	for _, s := range order {
		if err := x.SetSource(toolsearch.Source{Name: s}, by[s]); err != nil {
			return nil, err
		}
	}
	return x, nil
}
