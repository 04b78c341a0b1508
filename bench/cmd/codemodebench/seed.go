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
	scale   int    // the seeded data's size factor (-scale); 0 counts as 1
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

// pick returns one of words.
func (g *lcg) pick(words []string) string { return words[g.next(len(words))] }

// seedFiles returns the seeded tree: path relative to the root →
// content. scale (1 or more) multiplies the size of what the tasks read,
// never the number of files: a note has scale times as many lines, a
// sales CSV scale times as many rows, an order scale times as many
// items, a service config scale-1 more groups of settings and a guide
// scale-1 more paragraphs. At scale 1 it is the tree the benchmark
// always had; above, each file starts as at scale 1 (the base draws of
// g are the same) and the extra content comes from a generator of its
// own, x, inserted before a note's last line and appended elsewhere.
func seedFiles(scale int) map[string]string {
	scale = max(scale, 1)
	g, x := lcg(7), lcg(11)
	f := map[string]string{}
	for i, w := range noteWords {
		var b strings.Builder
		fmt.Fprintf(&b, "# %s notes\n\n", w)
		n := 6 + g.next(5)
		for l := range n * scale {
			owner := ""
			if l < n {
				owner = customers[g.next(len(customers))]
			} else {
				owner = x.pick(customers)
			}
			fmt.Fprintf(&b, "- item %d about the %s, owner %s\n", l+1, w, owner)
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
		n := 12 + 5*i
		for d := range n * scale {
			if d < n {
				fmt.Fprintf(&b, "2026-%02d-%02d,%s,%s,%d\n", 1+d%12, 1+g.next(28), r, products[g.next(len(products))], 10+g.next(490))
			} else {
				fmt.Fprintf(&b, "2026-%02d-%02d,%s,%s,%d\n", 1+d%12, 1+x.next(28), r, x.pick(products), 10+x.next(490))
			}
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
		n := 1 + g.next(4)
		for range n {
			o.Items = append(o.Items, item{products[g.next(len(products))], 1 + g.next(5), 5 + g.next(95)})
		}
		for range n * (scale - 1) {
			o.Items = append(o.Items, item{x.pick(products), 1 + x.next(5), 5 + x.next(95)})
		}
		b, _ := json.MarshalIndent(o, "", "  ")
		f[fmt.Sprintf("data/orders/order-%02d.json", i+1)] = string(b) + "\n"
	}
	for i, s := range services {
		c := map[string]any{"name": s, "port": 8080 + i, "debug": i == 1 || i == 4, "replicas": 1 + g.next(4), "log_level": "info"}
		env := ""
		if scale > 1 {
			env = []string{"prod", "staging", "eu", "us"}[x.next(4)]
		}
		for k := range scale - 1 {
			name, group := configGroup(&x, s, env, k)
			c[name] = group
		}
		b, _ := json.MarshalIndent(c, "", "  ")
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
		var b strings.Builder
		fmt.Fprintf(&b, "---\ntitle: Guide %d\nversion: %s\n---\n\nSome text.\n", i+1, v)
		for range scale - 1 {
			b.WriteString("\n" + guideParagraph(&x) + "\n")
		}
		f[fmt.Sprintf("docs/guide-%d.md", i+1)] = b.String()
	}
	f["reports/README.md"] = "Generated reports.\n"
	return f
}

// configGroups are the settings a service config gains above scale 1,
// one group (a nested object) per step of scale, in this order; past the
// last, they come round again with a number ("http_2").
var configGroups = []string{"http", "database", "cache", "metrics", "tracing", "auth", "queue", "storage", "limits", "features"}

// configGroup returns the k-th extra group of service s's config (k from
// 0) in environment env, and its name. No group has a key the config-audit task reads
// (name, port, debug) at the top level.
func configGroup(x *lcg, s, env string, k int) (string, map[string]any) {
	kind := configGroups[k%len(configGroups)]
	name := kind
	if k >= len(configGroups) {
		name = fmt.Sprintf("%s_%d", kind, k/len(configGroups)+1)
	}
	switch kind {
	case "http":
		return name, map[string]any{"read_timeout_ms": 1000 * (1 + x.next(30)), "write_timeout_ms": 1000 * (1 + x.next(30)), "max_body_kb": 64 << x.next(6),
			"cors_origins": []string{"https://app.example.com", "https://" + env + ".example.com"}, "compression": x.next(2) == 0}
	case "database":
		return name, map[string]any{"host": s + "-db." + env + ".internal", "port": 5432, "name": s + "_" + env, "pool_size": 5 + x.next(45),
			"ssl_mode": []string{"require", "verify-full", "prefer"}[x.next(3)], "statement_timeout_ms": 500 * (1 + x.next(20))}
	case "cache":
		return name, map[string]any{"backend": []string{"redis", "memcached", "in-memory"}[x.next(3)], "address": "cache-" + env + ".internal:6379",
			"ttl_s": 30 * (1 + x.next(120)), "max_entries": 1000 * (1 + x.next(100)), "eviction": []string{"lru", "lfu"}[x.next(2)]}
	case "metrics":
		return name, map[string]any{"enabled": x.next(4) != 0, "path": "/metrics", "interval_s": 5 * (1 + x.next(12)),
			"labels": map[string]string{"service": s, "env": env}, "histogram_buckets_ms": []int{5, 10, 25, 50, 100, 250, 500, 1000}}
	case "tracing":
		return name, map[string]any{"enabled": x.next(3) != 0, "sample_rate": float64(1+x.next(100)) / 100, "endpoint": "http://otel-collector." + env + ".internal:4318",
			"propagators": []string{"tracecontext", "baggage"}}
	case "auth":
		return name, map[string]any{"issuer": "https://login." + env + ".example.com", "audience": s + "-api", "token_ttl_s": 300 * (1 + x.next(24)),
			"jwks_refresh_s": 3600, "required_scopes": []string{s + ":read", s + ":write"}}
	case "queue":
		return name, map[string]any{"url": "amqp://mq." + env + ".internal:5672/" + s, "prefetch": 1 + x.next(64), "retries": x.next(8),
			"dead_letter": s + ".dlq", "backoff_ms": 100 * (1 + x.next(50))}
	case "storage":
		return name, map[string]any{"bucket": s + "-" + env + "-assets", "region": []string{"eu-west-1", "us-east-1", "ap-south-1"}[x.next(3)],
			"prefix": s + "/", "retention_days": 7 * (1 + x.next(52)), "encryption": "aws:kms"}
	case "limits":
		return name, map[string]any{"requests_per_s": 50 * (1 + x.next(40)), "burst": 10 * (1 + x.next(20)), "max_connections": 100 * (1 + x.next(50)),
			"max_header_kb": 8 << x.next(3), "shutdown_grace_s": 5 * (1 + x.next(12))}
	default: // features
		return name, map[string]any{"new_ui": x.next(2) == 0, "beta_search": x.next(2) == 0, "bulk_export": x.next(2) == 0,
			"dark_launch_percent": 5 * x.next(21), "kill_switch": false}
	}
}

// guideParagraph returns a paragraph of a guide's body (above scale 1):
// two sentences of plausible prose that never mention a version.
func guideParagraph(x *lcg) string {
	verbs := []string{"Configure", "Check", "Restart", "Back up", "Review", "Rotate", "Deploy", "Monitor"}
	things := []string{"the ingest worker", "the API gateway", "the billing cache", "the search index", "the auth tokens", "the nightly export", "the staging cluster", "the alert rules"}
	whens := []string{"before each release", "after a schema change", "once a week", "when the error rate rises", "during the maintenance window", "on the first of the month"}
	tails := []string{"Keep a note of what changed in the team channel.", "If anything looks wrong, roll back and open an incident.",
		"The runbook in the wiki lists the exact commands.", "Ask the on-call engineer before touching production.",
		"Record the outcome in the change log so the next person knows.", "Dashboards for this live under the service's folder."}
	return fmt.Sprintf("%s %s %s, and keep an eye on %s while you do. %s",
		x.pick(verbs), x.pick(things), x.pick(whens), x.pick(things), x.pick(tails))
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
	for p, content := range seedFiles(e.scale) {
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
	var b []byte
	if seeded {
		b = memoryGraph(e.scale)
	}
	return os.WriteFile(e.memFile, b, 0o644)
}

// memoryGraph returns the seeded graph as server-memory's JSON lines.
// Each person has two observations (team, year joined), and 2×(scale-1)
// more above scale 1 (skills, projects and the like, none naming a
// team); the people and relations are the same at every scale.
func memoryGraph(scale int) []byte {
	scale = max(scale, 1)
	x := lcg(13)
	var b strings.Builder
	enc := json.NewEncoder(&b)
	for i := 1; i <= people; i++ {
		obs := []string{"team:" + teams[i%len(teams)], fmt.Sprintf("joined %d", 2010+i%12)}
		for k := range 2 * (scale - 1) {
			obs = append(obs, personFact(&x, k))
		}
		enc.Encode(map[string]any{"type": "entity", "name": person(i), "entityType": "person", "observations": obs})
	}
	for i := 2; i <= people; i++ {
		enc.Encode(map[string]any{"type": "relation", "from": person(i), "to": person(i / 2), "relationType": "reports_to"})
	}
	return []byte(b.String())
}

// personFact returns the k-th extra observation of a person (above
// scale 1). None contains "team:" (memory-add-observations searches for
// "team:payments") or the observation that task adds.
func personFact(x *lcg, k int) string {
	switch k % 8 {
	case 0:
		return "skill: " + x.pick([]string{"go", "typescript", "postgres", "kubernetes", "terraform", "react", "python", "rust"})
	case 1:
		return fmt.Sprintf("worked from %s in 2025-%02d", x.pick([]string{"Berlin", "Lisbon", "Toronto", "Austin", "Singapore", "Nairobi"}), 1+x.next(12))
	case 2:
		return "project: " + x.pick([]string{"checkout rewrite", "search relevance", "cost dashboard", "SSO rollout", "data retention", "mobile API"})
	case 3:
		return fmt.Sprintf("was on call in 2025-W%02d", 1+x.next(52))
	case 4:
		return fmt.Sprintf("mentors %s", person(1+x.next(people)))
	case 5:
		return "speaks " + x.pick([]string{"English", "German", "Portuguese", "French", "Spanish", "Swahili", "Mandarin"})
	case 6:
		return fmt.Sprintf("last review 2025-%02d: %s", 1+x.next(12), x.pick([]string{"exceeds expectations", "meets expectations", "strong on delivery", "growing as a lead"}))
	default:
		return fmt.Sprintf("shipped the %s in 2025-Q%d", x.pick([]string{"rate limiter", "audit log", "CSV export", "retry queue", "admin console", "feature flags"}), 1+x.next(4))
	}
}

// reset writes both.
func (e *env) reset(seededMemory bool) error {
	if err := e.resetFiles(); err != nil {
		return err
	}
	return e.resetMemory(seededMemory)
}

// seedSummary describes the seeded data at scale, for the report's
// first line.
func seedSummary(scale int) string {
	scale = max(scale, 1)
	f := seedFiles(scale)
	total := 0
	spans := map[string]*[2]int{}
	seen := func(kind string, n int) {
		s, ok := spans[kind]
		if !ok {
			spans[kind] = &[2]int{n, n}
			return
		}
		s[0], s[1] = min(s[0], n), max(s[1], n)
	}
	for p, c := range f {
		total += len(c)
		switch {
		case strings.HasPrefix(p, "notes/"):
			seen("notes", len(lines(c)))
		case strings.HasPrefix(p, "data/sales-"):
			seen("sales", len(lines(c))-1)
		case strings.HasPrefix(p, "data/orders/"):
			var o struct{ Items []json.RawMessage }
			json.Unmarshal([]byte(c), &o)
			seen("orders", len(o.Items))
		case strings.HasPrefix(p, "config/"):
			seen("configs", len(c))
		case strings.HasPrefix(p, "docs/"):
			seen("guides", len(c))
		}
	}
	span := func(kind string) string {
		s := spans[kind]
		if s[0] == s[1] {
			return fmt.Sprint(s[0])
		}
		return fmt.Sprintf("%d–%d", s[0], s[1])
	}
	return fmt.Sprintf("Seeded data ×%d (-scale %d): %d files, %d bytes (notes of %s lines, sales CSVs of %s rows, orders of %s items, configs of %s bytes, guides of %s bytes); the memory graph: %d people with %d observations each, %d bytes.",
		scale, scale, len(f), total, span("notes"), span("sales"), span("orders"), span("configs"), span("guides"), people, 2*scale, len(memoryGraph(scale)))
}
