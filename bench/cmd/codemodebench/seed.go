package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// An env is the upstreams' state: the file server's root and the
// memory server's file. Every task starts from the same state: it is
// written again before each variant of each run (not measured).
type env struct {
	root    string // server-filesystem's only allowed directory (symlinks resolved)
	memFile string // server-memory's MEMORY_FILE_PATH
}

// The seeded files, 40 in all.
var (
	noteWords = []string{"planning", "review", "budget", "roadmap", "release", "hiring", "incident", "retro", "launch", "audit"}
	regions   = []string{"north", "south", "east", "west"}
	products  = []string{"widget", "gadget", "gizmo", "doohickey", "sprocket"}
	customers = []string{"acme", "globex", "initech", "umbrella", "hooli"}
	services  = []string{"api", "auth", "billing", "cache", "search", "worker"}
	teams     = []string{"payments", "search", "infra"}
)

// lcg is a small deterministic generator for the seeded numbers.
type lcg uint32

func (g *lcg) next(n int) int {
	*g = *g*1664525 + 1013904223
	return int(uint32(*g)>>8) % n
}

// files returns the seeded tree: path relative to the root → content.
func seedFiles() map[string]string {
	g := lcg(7)
	f := map[string]string{}
	for i, w := range noteWords {
		var b strings.Builder
		fmt.Fprintf(&b, "# %s notes\n\n", w)
		for l := range 6 + g.next(5) {
			fmt.Fprintf(&b, "- item %d about the %s, owner %s\n", l+1, w, customers[g.next(len(customers))])
		}
		if i%3 == 1 { // notes 02, 05, 08: a deadline
			fmt.Fprintf(&b, "- the deadline for the %s is Friday\n", w)
		}
		if i == 9 {
			b.WriteString("- no deadlines here, only a plural\n")
		}
		f[fmt.Sprintf("notes/note%02d.txt", i+1)] = b.String()
	}
	for i, r := range regions {
		var b strings.Builder
		b.WriteString("date,region,product,amount\n")
		for d := range 12 + 5*i {
			fmt.Fprintf(&b, "2026-%02d-%02d,%s,%s,%d\n", 1+d%12, 1+g.next(28), r, products[g.next(len(products))], 10+g.next(490))
		}
		f["data/sales-"+r+".csv"] = b.String()
	}
	for i := range 8 {
		type item struct {
			SKU   string `json:"sku"`
			Qty   int    `json:"qty"`
			Price int    `json:"price"`
		}
		o := struct {
			ID       string `json:"id"`
			Customer string `json:"customer"`
			Status   string `json:"status"`
			Items    []item `json:"items"`
		}{ID: fmt.Sprintf("ord-%03d", 101+i), Customer: customers[g.next(len(customers))], Status: []string{"open", "paid", "shipped"}[g.next(3)]}
		for range 1 + g.next(4) {
			o.Items = append(o.Items, item{products[g.next(len(products))], 1 + g.next(5), 5 + g.next(95)})
		}
		b, _ := json.MarshalIndent(o, "", "  ")
		f[fmt.Sprintf("data/orders/order-%02d.json", i+1)] = string(b) + "\n"
	}
	for i, s := range services {
		b, _ := json.MarshalIndent(map[string]any{"name": s, "port": 8080 + i, "debug": i == 1 || i == 4, "replicas": 1 + g.next(4), "log_level": "info"}, "", "  ")
		f["config/"+s+".json"] = string(b) + "\n"
	}
	for i := range 5 {
		f[fmt.Sprintf("inbox/draft_%02d.txt", i+1)] = fmt.Sprintf("draft %d\n", i+1)
	}
	for i := range 3 {
		f[fmt.Sprintf("inbox/final_%02d.txt", i+1)] = fmt.Sprintf("final %d\n", i+1)
	}
	for i := range 3 {
		v := "2.0"
		if i != 1 {
			v = "1.0"
		}
		f[fmt.Sprintf("docs/guide-%d.md", i+1)] = fmt.Sprintf("---\ntitle: Guide %d\nversion: %s\n---\n\nSome text.\n", i+1, v)
	}
	f["reports/README.md"] = "Generated reports.\n"
	return f
}

// resetFiles empties the root and writes the seeded tree.
func (e *env) resetFiles() error {
	entries, err := os.ReadDir(e.root)
	if err != nil {
		return err
	}
	for _, en := range entries {
		if err := os.RemoveAll(filepath.Join(e.root, en.Name())); err != nil {
			return err
		}
	}
	for p, content := range seedFiles() {
		full := filepath.Join(e.root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// The seeded knowledge graph: person-01 … person-20, each in one of
// three teams, person-N reporting to person-N/2.
const people = 20

func person(i int) string { return fmt.Sprintf("person-%02d", i) }

// resetMemory writes the memory server's file: the seeded graph, or an
// empty one.
func (e *env) resetMemory(seeded bool) error {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	if seeded {
		for i := 1; i <= people; i++ {
			enc.Encode(map[string]any{"type": "entity", "name": person(i), "entityType": "person",
				"observations": []string{"team:" + teams[i%len(teams)], fmt.Sprintf("joined %d", 2010+i%12)}})
		}
		for i := 2; i <= people; i++ {
			enc.Encode(map[string]any{"type": "relation", "from": person(i), "to": person(i / 2), "relationType": "reports_to"})
		}
	}
	return os.WriteFile(e.memFile, []byte(b.String()), 0o644)
}

// reset writes both.
func (e *env) reset(seededMemory bool) error {
	if err := e.resetFiles(); err != nil {
		return err
	}
	return e.resetMemory(seededMemory)
}
