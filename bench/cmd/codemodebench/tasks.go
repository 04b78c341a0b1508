package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A task is one multi-step job written twice: as the tool calls a host
// makes for a model, round by round (direct), and as one run_script
// call (script). Both must give the same answer.
type task struct {
	name string
	what string // the request, as a user would put it
	// memory: the memory server starts with the seeded graph (else empty).
	memory bool
	// direct makes the calls a model would, through h, and does what the
	// model would do with the results; it returns the answer.
	direct func(h *host, e *env) (any, error)
	// script is the run_script body; "@ROOT@" stands for the files root.
	script string
}

// tasks is the benchmark. The direct variants issue independent calls
// of one step in one round (one model turn with parallel tool calls).
var tasks = []task{
	{
		name: "grep-notes",
		what: "Which notes in notes/ mention the word 'deadline'?",
		direct: func(h *host, e *env) (any, error) {
			dir := e.root + "/notes"
			list, err := h.texts(call{"files__list_directory", obj{"path": dir}})
			if err != nil {
				return nil, err
			}
			names := listedFiles(list[0])
			var reads []call
			for _, n := range names {
				reads = append(reads, call{"files__read_text_file", obj{"path": dir + "/" + n}})
			}
			texts, err := h.texts(reads...)
			if err != nil {
				return nil, err
			}
			word := regexp.MustCompile(`(?i)\bdeadline\b`)
			var hits []string
			for i, n := range names {
				if word.MatchString(texts[i]) {
					hits = append(hits, n)
				}
			}
			slices.Sort(hits)
			return hits, nil
		},
		script: `const dir = "@ROOT@/notes";
const list = await files.list_directory({ path: dir });
const names: string[] = list.content.split("\n").filter((l: string) => l.startsWith("[FILE] ")).map((l: string) => l.slice(7));
const texts = await Promise.all(names.map((n) => files.read_text_file({ path: dir + "/" + n })));
return names.filter((n, i) => /\bdeadline\b/i.test(texts[i].content)).sort();`,
	},
	{
		name: "count-extensions",
		what: "How many files of each extension are there, in the whole tree?",
		direct: func(h *host, e *env) (any, error) {
			t, err := h.texts(call{"files__directory_tree", obj{"path": e.root}})
			if err != nil {
				return nil, err
			}
			var tree []treeNode
			if err := json.Unmarshal([]byte(t[0]), &tree); err != nil {
				return nil, err
			}
			counts := map[string]int{}
			var walk func([]treeNode)
			walk = func(nodes []treeNode) {
				for _, n := range nodes {
					if n.Type == "directory" {
						walk(n.Children)
					} else {
						counts[path.Ext(n.Name)]++
					}
				}
			}
			walk(tree)
			return counts, nil
		},
		script: `type Node = { name: string; type: string; children?: Node[] };
const tree: Node[] = JSON.parse((await files.directory_tree({ path: "@ROOT@" })).content);
const counts: Record<string, number> = {};
const walk = (nodes: Node[]) => {
  for (const n of nodes) {
    if (n.type === "directory") walk(n.children ?? []);
    else { const i = n.name.lastIndexOf("."); const ext = i > 0 ? n.name.slice(i) : ""; counts[ext] = (counts[ext] ?? 0) + 1; }
  }
};
walk(tree);
return counts;`,
	},
	{
		name: "memory-build-graph",
		what: "Record 20 services, each depending on two others, then tell me which services depend on svc-07.",
		direct: func(h *host, e *env) (any, error) {
			var ents, rels []obj
			for i := 1; i <= 20; i++ {
				ents = append(ents, obj{"name": svc(i), "entityType": "service", "observations": []string{fmt.Sprintf("owner: team-%d", i%4)}})
				rels = append(rels, obj{"from": svc(i), "to": svc(i*3%20 + 1), "relationType": "depends_on"},
					obj{"from": svc(i), "to": svc((i+5)%20 + 1), "relationType": "depends_on"})
			}
			if _, err := h.one("memory__create_entities", obj{"entities": ents}); err != nil {
				return nil, err
			}
			if _, err := h.one("memory__create_relations", obj{"relations": rels}); err != nil {
				return nil, err
			}
			res, err := h.one("memory__open_nodes", obj{"names": []string{"svc-07"}})
			if err != nil {
				return nil, err
			}
			var g graph
			if err := structured(res, &g); err != nil {
				return nil, err
			}
			var deps []string
			for _, r := range g.Relations {
				if r.To == "svc-07" && r.RelationType == "depends_on" {
					deps = append(deps, r.From)
				}
			}
			slices.Sort(deps)
			return deps, nil
		},
		script: `const svc = (i: number) => "svc-" + String(i).padStart(2, "0");
const entities = [], relations = [];
for (let i = 1; i <= 20; i++) {
  entities.push({ name: svc(i), entityType: "service", observations: ["owner: team-" + (i % 4)] });
  relations.push({ from: svc(i), to: svc((i * 3) % 20 + 1), relationType: "depends_on" },
                 { from: svc(i), to: svc((i + 5) % 20 + 1), relationType: "depends_on" });
}
await memory.create_entities({ entities });
await memory.create_relations({ relations });
const g = await memory.open_nodes({ names: ["svc-07"] });
return g.relations.filter((r) => r.to === "svc-07" && r.relationType === "depends_on").map((r) => r.from).sort();`,
	},
	{
		name: "sum-tree",
		what: "Add up these 16 numbers with the get-sum tool.",
		direct: func(h *host, e *env) (any, error) {
			nums := slices.Clone(sumInput)
			for len(nums) > 1 {
				var calls []call
				for i := 0; i+1 < len(nums); i += 2 {
					calls = append(calls, call{"everything__get-sum", obj{"a": nums[i], "b": nums[i+1]}})
				}
				texts, err := h.texts(calls...)
				if err != nil {
					return nil, err
				}
				next := make([]float64, len(texts))
				for i, t := range texts {
					if next[i], err = sumOf(t); err != nil {
						return nil, err
					}
				}
				nums = next
			}
			return nums[0], nil
		},
		script: `let nums = [3, 14, 15, 92, 65, 35, 89, 79, 32, 38, 46, 26, 43, 38, 32, 79];
while (nums.length > 1) {
  const pairs = [];
  for (let i = 0; i + 1 < nums.length; i += 2) pairs.push(everything.get_sum({ a: nums[i], b: nums[i + 1] }));
  nums = (await Promise.all(pairs)).map((r) => Number(/is (-?[\d.]+)/.exec(r[0].text)![1]));
}
return nums[0];`,
	},
	{
		name: "echo-transform",
		what: "Echo each of these 12 words through the echo server and give me them upper-cased, in reverse order.",
		direct: func(h *host, e *env) (any, error) {
			var calls []call
			for _, w := range echoWords {
				calls = append(calls, call{"echo__echo", obj{"msg": w}})
			}
			texts, err := h.texts(calls...)
			if err != nil {
				return nil, err
			}
			out := make([]string, len(texts))
			for i, t := range texts {
				out[len(texts)-1-i] = strings.ToUpper(t)
			}
			return out, nil
		},
		script: `const words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima"];
const out = await Promise.all(words.map((w) => echo.echo({ msg: w })));
return out.map((r) => r[0].text.toUpperCase()).reverse();`,
	},
	{
		name: "csv-line-counts",
		what: "Find every CSV file and tell me how many data rows each has.",
		direct: func(h *host, e *env) (any, error) {
			found, err := h.texts(call{"files__search_files", obj{"path": e.root, "pattern": "**/*.csv"}})
			if err != nil {
				return nil, err
			}
			paths := lines(found[0])
			var reads []call
			for _, p := range paths {
				reads = append(reads, call{"files__read_text_file", obj{"path": p}})
			}
			texts, err := h.texts(reads...)
			if err != nil {
				return nil, err
			}
			out := map[string]int{}
			for i, p := range paths {
				out[path.Base(p)] = len(lines(texts[i])) - 1
			}
			return out, nil
		},
		script: `const found = await files.search_files({ path: "@ROOT@", pattern: "**/*.csv" });
const paths: string[] = found.content.split("\n").filter((l: string) => l.trim() !== "");
const texts = await Promise.all(paths.map((p) => files.read_text_file({ path: p })));
const out: Record<string, number> = {};
paths.forEach((p, i) => { out[p.split("/").pop()!] = texts[i].content.split("\n").filter((l: string) => l.trim() !== "").length - 1; });
return out;`,
	},
	{
		name: "archive-drafts",
		what: "Move every inbox/draft_* file into a new archive/ folder; which did you move?",
		direct: func(h *host, e *env) (any, error) {
			r, err := h.texts(call{"files__search_files", obj{"path": e.root + "/inbox", "pattern": "draft_*"}},
				call{"files__create_directory", obj{"path": e.root + "/archive"}})
			if err != nil {
				return nil, err
			}
			var moves []call
			var moved []string
			for _, p := range lines(r[0]) {
				moves = append(moves, call{"files__move_file", obj{"source": p, "destination": e.root + "/archive/" + path.Base(p)}})
				moved = append(moved, path.Base(p))
			}
			if _, err := h.round(moves...); err != nil {
				return nil, err
			}
			slices.Sort(moved)
			return moved, nil
		},
		script: `const root = "@ROOT@";
const [found] = await Promise.all([files.search_files({ path: root + "/inbox", pattern: "draft_*" }),
  files.create_directory({ path: root + "/archive" })]);
const paths: string[] = found.content.split("\n").filter((l: string) => l.trim() !== "");
await Promise.all(paths.map((p) => files.move_file({ source: p, destination: root + "/archive/" + p.split("/").pop() })));
return paths.map((p) => p.split("/").pop()).sort();`,
	},
	{
		name: "orders-to-csv",
		what: "Summarise the JSON orders as reports/orders.csv (id, customer, status, total) and show me the CSV.",
		direct: func(h *host, e *env) (any, error) {
			found, err := h.texts(call{"files__search_files", obj{"path": e.root + "/data/orders", "pattern": "*.json"}})
			if err != nil {
				return nil, err
			}
			var reads []call
			for _, p := range lines(found[0]) {
				reads = append(reads, call{"files__read_text_file", obj{"path": p}})
			}
			texts, err := h.texts(reads...)
			if err != nil {
				return nil, err
			}
			var rows []string
			for _, t := range texts {
				var o struct {
					ID, Customer, Status string
					Items                []struct{ Qty, Price int }
				}
				if err := json.Unmarshal([]byte(t), &o); err != nil {
					return nil, err
				}
				total := 0
				for _, it := range o.Items {
					total += it.Qty * it.Price
				}
				rows = append(rows, fmt.Sprintf("%s,%s,%s,%d", o.ID, o.Customer, o.Status, total))
			}
			slices.Sort(rows)
			csv := "id,customer,status,total\n" + strings.Join(rows, "\n") + "\n"
			if _, err := h.one("files__write_file", obj{"path": e.root + "/reports/orders.csv", "content": csv}); err != nil {
				return nil, err
			}
			return csv, nil
		},
		script: `const root = "@ROOT@";
const found = await files.search_files({ path: root + "/data/orders", pattern: "*.json" });
const paths: string[] = found.content.split("\n").filter((l: string) => l.trim() !== "");
const orders = (await Promise.all(paths.map((p) => files.read_text_file({ path: p })))).map((r) => JSON.parse(r.content));
const rows = orders.map((o: any) => [o.id, o.customer, o.status, o.items.reduce((s: number, it: any) => s + it.qty * it.price, 0)].join(",")).sort();
const csv = "id,customer,status,total\n" + rows.join("\n") + "\n";
await files.write_file({ path: root + "/reports/orders.csv", content: csv });
return csv;`,
	},
	{
		name:   "memory-add-observations",
		what:   "Note 'on-call: 2026-W48' on everyone in the payments team; who got it?",
		memory: true,
		direct: func(h *host, e *env) (any, error) {
			res, err := h.one("memory__search_nodes", obj{"query": "team:payments"})
			if err != nil {
				return nil, err
			}
			var g graph
			if err := structured(res, &g); err != nil {
				return nil, err
			}
			var obs []obj
			var names []string
			for _, en := range g.Entities {
				obs = append(obs, obj{"entityName": en.Name, "contents": []string{"on-call: 2026-W48"}})
				names = append(names, en.Name)
			}
			if _, err := h.one("memory__add_observations", obj{"observations": obs}); err != nil {
				return nil, err
			}
			slices.Sort(names)
			return names, nil
		},
		script: `const found = await memory.search_nodes({ query: "team:payments" });
const names = found.entities.map((e) => e.name);
await memory.add_observations({ observations: names.map((n) => ({ entityName: n, contents: ["on-call: 2026-W48"] })) });
return names.sort();`,
	},
	{
		name:   "memory-manager-chain",
		what:   "Who is person-17's chain of managers, up to the top?",
		memory: true,
		direct: func(h *host, e *env) (any, error) {
			chain := []string{}
			for cur := "person-17"; ; {
				res, err := h.one("memory__open_nodes", obj{"names": []string{cur}})
				if err != nil {
					return nil, err
				}
				var g graph
				if err := structured(res, &g); err != nil {
					return nil, err
				}
				next := ""
				for _, r := range g.Relations {
					if r.From == cur && r.RelationType == "reports_to" {
						next = r.To
					}
				}
				if next == "" {
					return chain, nil
				}
				chain = append(chain, next)
				cur = next
			}
		},
		script: `const chain: string[] = [];
for (let cur = "person-17"; ;) {
  const g = await memory.open_nodes({ names: [cur] });
  const up = g.relations.find((r) => r.from === cur && r.relationType === "reports_to");
  if (!up) return chain;
  chain.push(up.to);
  cur = up.to;
}`,
	},
	{
		name: "annotated-messages",
		what: "For each annotated message type (error, success, debug), what priority and audience does it carry?",
		direct: func(h *host, e *env) (any, error) {
			types := []string{"error", "success", "debug"}
			var calls []call
			for _, t := range types {
				calls = append(calls, call{"everything__get-annotated-message", obj{"messageType": t, "includeImage": false}})
			}
			res, err := h.round(calls...)
			if err != nil {
				return nil, err
			}
			out := map[string]any{}
			for i, r := range res {
				a := r.Content[0].(*mcp.TextContent).Annotations
				aud := []string{}
				for _, x := range a.Audience {
					aud = append(aud, string(x))
				}
				out[types[i]] = obj{"priority": a.Priority, "audience": aud}
			}
			return out, nil
		},
		script: `const get = tools["everything__get-annotated-message"];
const types = ["error", "success", "debug"];
const res = await Promise.all(types.map((t) => get({ messageType: t, includeImage: false })));
const out: Record<string, unknown> = {};
types.forEach((t, i) => { const a = res[i][0].annotations; out[t] = { priority: a.priority, audience: a.audience ?? [] }; });
return out;`,
	},
	{
		name: "resource-links",
		what: "Get ten resource links and list the URIs of the text resources.",
		direct: func(h *host, e *env) (any, error) {
			res, err := h.one("everything__get-resource-links", obj{"count": 10})
			if err != nil {
				return nil, err
			}
			var uris []string
			for _, c := range res.Content {
				if l, ok := c.(*mcp.ResourceLink); ok && strings.Contains(l.URI, "/text/") {
					uris = append(uris, l.URI)
				}
			}
			return uris, nil
		},
		script: `const blocks = await everything.get_resource_links({ count: 10 });
return blocks.filter((b) => b.type === "resource_link" && b.uri.includes("/text/")).map((b) => b.uri);`,
	},
	{
		name: "hottest-city",
		what: "Which of New York, Chicago and Los Angeles is hottest, and how hot?",
		direct: func(h *host, e *env) (any, error) {
			cities := []string{"New York", "Chicago", "Los Angeles"}
			var calls []call
			for _, c := range cities {
				calls = append(calls, call{"everything__get-structured-content", obj{"location": c}})
			}
			res, err := h.round(calls...)
			if err != nil {
				return nil, err
			}
			best, hottest := "", -1e9
			for i, r := range res {
				var w struct{ Temperature float64 }
				if err := structured(r, &w); err != nil {
					return nil, err
				}
				if w.Temperature > hottest {
					best, hottest = cities[i], w.Temperature
				}
			}
			return obj{"city": best, "temperature": hottest}, nil
		},
		script: `const cities = ["New York", "Chicago", "Los Angeles"];
const ws = await Promise.all(cities.map((c) => everything.get_structured_content({ location: c })));
let best = 0;
ws.forEach((w, i) => { if (w.temperature > ws[best].temperature) best = i; });
return { city: cities[best], temperature: ws[best].temperature };`,
	},
	{
		name: "largest-csv",
		what: "Which CSV file in data/ is the largest, in bytes?",
		direct: func(h *host, e *env) (any, error) {
			found, err := h.texts(call{"files__search_files", obj{"path": e.root + "/data", "pattern": "*.csv"}})
			if err != nil {
				return nil, err
			}
			paths := lines(found[0])
			var infos []call
			for _, p := range paths {
				infos = append(infos, call{"files__get_file_info", obj{"path": p}})
			}
			texts, err := h.texts(infos...)
			if err != nil {
				return nil, err
			}
			best, size := "", -1
			for i, t := range texts {
				m := regexp.MustCompile(`(?m)^size: (\d+)`).FindStringSubmatch(t)
				if m == nil {
					return nil, fmt.Errorf("no size in %q", t)
				}
				if n, _ := strconv.Atoi(m[1]); n > size {
					best, size = path.Base(paths[i]), n
				}
			}
			return obj{"file": best, "bytes": size}, nil
		},
		script: `const found = await files.search_files({ path: "@ROOT@/data", pattern: "*.csv" });
const paths: string[] = found.content.split("\n").filter((l: string) => l.trim() !== "");
const infos = await Promise.all(paths.map((p) => files.get_file_info({ path: p })));
let best = "", size = -1;
infos.forEach((info, i) => { const n = Number(/^size: (\d+)/m.exec(info.content)![1]); if (n > size) { best = paths[i].split("/").pop()!; size = n; } });
return { file: best, bytes: size };`,
	},
	{
		name: "config-audit",
		what: "Which service configs have debug on, and on which ports?",
		direct: func(h *host, e *env) (any, error) {
			found, err := h.texts(call{"files__search_files", obj{"path": e.root + "/config", "pattern": "*.json"}})
			if err != nil {
				return nil, err
			}
			var reads []call
			for _, p := range lines(found[0]) {
				reads = append(reads, call{"files__read_text_file", obj{"path": p}})
			}
			texts, err := h.texts(reads...)
			if err != nil {
				return nil, err
			}
			out := []obj{}
			for _, t := range texts {
				var c struct {
					Name  string
					Port  int
					Debug bool
				}
				if err := json.Unmarshal([]byte(t), &c); err != nil {
					return nil, err
				}
				if c.Debug {
					out = append(out, obj{"name": c.Name, "port": c.Port})
				}
			}
			slices.SortFunc(out, func(a, b obj) int { return strings.Compare(a["name"].(string), b["name"].(string)) })
			return out, nil
		},
		script: `const found = await files.search_files({ path: "@ROOT@/config", pattern: "*.json" });
const paths: string[] = found.content.split("\n").filter((l: string) => l.trim() !== "");
const cfgs = (await Promise.all(paths.map((p) => files.read_text_file({ path: p })))).map((r) => JSON.parse(r.content));
return cfgs.filter((c: any) => c.debug).map((c: any) => ({ name: c.name, port: c.port }))
  .sort((a: any, b: any) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);`,
	},
	{
		name: "bump-doc-versions",
		what: "Bump every doc in docs/ at version 1.0 to 1.1; which did you change?",
		direct: func(h *host, e *env) (any, error) {
			found, err := h.texts(call{"files__search_files", obj{"path": e.root + "/docs", "pattern": "*.md"}})
			if err != nil {
				return nil, err
			}
			paths := lines(found[0])
			var reads []call
			for _, p := range paths {
				reads = append(reads, call{"files__read_text_file", obj{"path": p}})
			}
			texts, err := h.texts(reads...)
			if err != nil {
				return nil, err
			}
			var edits []call
			changed := []string{}
			for i, t := range texts {
				if strings.Contains(t, "\nversion: 1.0\n") {
					edits = append(edits, call{"files__edit_file", obj{"path": paths[i], "edits": []obj{{"oldText": "version: 1.0", "newText": "version: 1.1"}}}})
					changed = append(changed, path.Base(paths[i]))
				}
			}
			if _, err := h.round(edits...); err != nil {
				return nil, err
			}
			slices.Sort(changed)
			return changed, nil
		},
		script: `const found = await files.search_files({ path: "@ROOT@/docs", pattern: "*.md" });
const paths: string[] = found.content.split("\n").filter((l: string) => l.trim() !== "");
const texts = await Promise.all(paths.map((p) => files.read_text_file({ path: p })));
const todo = paths.filter((p, i) => texts[i].content.includes("\nversion: 1.0\n"));
await Promise.all(todo.map((p) => files.edit_file({ path: p, edits: [{ oldText: "version: 1.0", newText: "version: 1.1" }] })));
return todo.map((p) => p.split("/").pop()).sort();`,
	},
	{
		name: "top-product",
		what: "Across all the sales CSVs, which product sold the most (by amount), and the total per product?",
		direct: func(h *host, e *env) (any, error) {
			found, err := h.texts(call{"files__search_files", obj{"path": e.root + "/data", "pattern": "sales-*.csv"}})
			if err != nil {
				return nil, err
			}
			all, err := h.texts(call{"files__read_multiple_files", obj{"paths": lines(found[0])}})
			if err != nil {
				return nil, err
			}
			totals := map[string]int{}
			row := regexp.MustCompile(`^\d{4}-\d\d-\d\d,`)
			for _, l := range lines(all[0]) {
				if f := strings.Split(l, ","); row.MatchString(l) && len(f) == 4 {
					n, _ := strconv.Atoi(f[3])
					totals[f[2]] += n
				}
			}
			top := slices.MaxFunc(slices.Sorted(maps.Keys(totals)), func(a, b string) int { return totals[a] - totals[b] })
			return obj{"top": top, "totals": totals}, nil
		},
		script: `const found = await files.search_files({ path: "@ROOT@/data", pattern: "sales-*.csv" });
const paths = found.content.split("\n").filter((l: string) => l.trim() !== "");
const all = await files.read_multiple_files({ paths });
const totals: Record<string, number> = {};
for (const l of all.content.split("\n")) {
  const f = l.split(",");
  if (/^\d{4}-\d\d-\d\d,/.test(l) && f.length === 4) totals[f[2]] = (totals[f[2]] ?? 0) + Number(f[3]);
}
const top = Object.keys(totals).sort().reduce((a, b) => totals[b] > totals[a] ? b : a);
return { top, totals };`,
	},
}

var (
	sumInput  = []float64{3, 14, 15, 92, 65, 35, 89, 79, 32, 38, 46, 26, 43, 38, 32, 79}
	echoWords = []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima"}
)

func svc(i int) string { return fmt.Sprintf("svc-%02d", i) }

// treeNode is an entry of server-filesystem's directory_tree.
type treeNode struct {
	Name, Type string
	Children   []treeNode
}

// graph is server-memory's structured result.
type graph struct {
	Entities []struct {
		Name, EntityType string
		Observations     []string
	}
	Relations []struct{ From, To, RelationType string }
}

// structured decodes a result's structured content into v.
func structured(res *mcp.CallToolResult, v any) error {
	if res.StructuredContent == nil {
		return fmt.Errorf("no structured content in %s", resultBytes(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// lines returns the non-blank lines of s.
func lines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// listedFiles returns the file names of a list_directory result.
func listedFiles(s string) []string {
	var out []string
	for _, l := range lines(s) {
		if n, ok := strings.CutPrefix(l, "[FILE] "); ok {
			out = append(out, n)
		}
	}
	return out
}

// sumOf reads the sum out of get-sum's "The sum of A and B is C."
func sumOf(s string) (float64, error) {
	m := regexp.MustCompile(`is (-?[\d.]+)`).FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("no sum in %q", s)
	}
	return strconv.ParseFloat(strings.TrimSuffix(m[1], "."), 64)
}
