package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestUsesNamespace(t *testing.T) {
	for _, c := range []struct {
		script, ns string
		want       bool
	}{
		{`await files.read_text_file({})`, "files", true},
		{`await tools["everything__get-sum"]({})`, "everything", true},
		{`const echo = 1; return echo`, "echo", false},
		{`r[0].text; x.echo.y()`, "echo", false},
		{`await echo.echo({msg: "a"})`, "echo", true},
	} {
		if got := usesNamespace(c.script, c.ns); got != c.want {
			t.Errorf("usesNamespace(%q, %q) = %v", c.script, c.ns, got)
		}
	}
}

func TestToolsOf(t *testing.T) {
	s := &signer{
		byExpr: map[string]string{"files.read_text_file": "files__read_text_file", "everything.get_sum": "everything__get-sum"},
		sig:    map[string]string{"files__read_text_file": "files.read_text_file(...)", "everything__get-sum": "everything.get_sum(...)"},
	}
	got, err := s.toolsOf(`const a = await files.read_text_file({path: "x.files.y"}); const f = files.read_text_file;
return [a.content, await tools["everything__get-sum"]({a: 1, b: 2}), await everything.get_sum({a: 1, b: 2})]`)
	if err != nil || strings.Join(got, ",") != "everything__get-sum,files__read_text_file" {
		t.Errorf("toolsOf = %q, %v", got, err)
	}
	if _, err := s.toolsOf(`await files.write_file({})`); err == nil {
		t.Error("toolsOf of an unknown function: no error")
	}
	if _, err := s.toolsOf(`return 1`); err == nil {
		t.Error("toolsOf of a script calling no tool: no error")
	}
}

func TestSameJSON(t *testing.T) {
	same, err := sameJSON([]byte(`{"b":[1,2],"a":1.0}`), []byte(`{"a":1,"b":[1,2]}`))
	if err != nil || !same {
		t.Errorf("same = %v, %v", same, err)
	}
	if same, _ := sameJSON([]byte(`[1,2]`), []byte(`[2,1]`)); same {
		t.Error("order of a list ignored")
	}
}

func TestParsers(t *testing.T) {
	if n, err := sumOf("The sum of 3 and 14 is 17."); err != nil || n != 17 {
		t.Errorf("sumOf = %v, %v", n, err)
	}
	if got := listedFiles("[DIR] a\n[FILE] b.txt\n\n[FILE] c.md"); strings.Join(got, ",") != "b.txt,c.md" {
		t.Errorf("listedFiles = %q", got)
	}
}

func TestTasks(t *testing.T) {
	if len(tasks) < 15 {
		t.Errorf("%d tasks, want at least 15", len(tasks))
	}
	seen := map[string]bool{}
	for _, tk := range tasks {
		if seen[tk.name] {
			t.Errorf("task %s twice", tk.name)
		}
		seen[tk.name] = true
		used := false
		for _, ns := range namespaces {
			used = used || usesNamespace(tk.script, ns)
		}
		if !used || tk.direct == nil || tk.what == "" {
			t.Errorf("task %s: incomplete (namespace used: %v)", tk.name, used)
		}
	}
	if n := len(seedFiles(1)); n != 40 {
		t.Errorf("%d seeded files, want 40", n)
	}
}

// seedHash returns the SHA-256 of the seeded tree (paths and contents,
// in path order) and its size in bytes.
func seedHash(f map[string]string) (string, int) {
	h := sha256.New()
	n := 0
	for _, p := range slices.Sorted(maps.Keys(f)) {
		fmt.Fprintf(h, "%s\x00%s\x00", p, f[p])
		n += len(f[p])
	}
	return hex.EncodeToString(h.Sum(nil)), n
}

// TestSeedScale checks that scale 1 seeds exactly the data the benchmark
// had before -scale (its figures in docs/performance.md), and that a
// larger scale makes every file that a task reads larger, and every
// person's observations more, with the same files and people.
func TestSeedScale(t *testing.T) {
	// The seeded tree and memory graph before -scale was added.
	const (
		files1    = "3f8cb76899d125ebde7c627ccdcce87f608df8431edef418e796590b8e619787"
		filesLen1 = 8436
		memory1   = "f91437aed1876ffb5afba5287af923fb24bdfc68a1ce35260f6ad001e9b7b126"
		memoryLen = 3681
	)
	one := seedFiles(1)
	if h, n := seedHash(one); h != files1 || n != filesLen1 {
		t.Errorf("seedFiles(1): sha256 %s, %d bytes; want %s, %d bytes", h, n, files1, filesLen1)
	}
	if h, n := seedHash(seedFiles(0)); h != files1 || n != filesLen1 {
		t.Errorf("seedFiles(0): sha256 %s, %d bytes; want scale 1's", h, n)
	}
	m := memoryGraph(1)
	if h := sha256.Sum256(m); hex.EncodeToString(h[:]) != memory1 || len(m) != memoryLen {
		t.Errorf("memoryGraph(1): sha256 %x, %d bytes; want %s, %d bytes", h, len(m), memory1, memoryLen)
	}

	ten := seedFiles(10)
	if !slices.Equal(slices.Sorted(maps.Keys(one)), slices.Sorted(maps.Keys(ten))) {
		t.Errorf("scale 10 seeds other files:\n  %q\n  %q", slices.Sorted(maps.Keys(one)), slices.Sorted(maps.Keys(ten)))
	}
	for p, c := range one {
		unread := strings.HasPrefix(p, "inbox/") || strings.HasPrefix(p, "reports/") // moved or listed, never read
		switch {
		case unread && ten[p] != c:
			t.Errorf("%s: changed at scale 10", p)
		case !unread && len(ten[p]) < 2*len(c):
			t.Errorf("%s: %d bytes at scale 10, %d at scale 1", p, len(ten[p]), len(c))
		}
	}
	if h, _ := seedHash(ten); func() bool { h2, _ := seedHash(seedFiles(10)); return h != h2 }() {
		t.Error("seedFiles(10) is not deterministic")
	}
	// The answers' inputs keep their shape: the same notes mention a
	// deadline, every config still parses with the keys config-audit reads,
	// every CSV row and order is well formed.
	word := regexp.MustCompile(`(?i)\bdeadline\b`)
	for p := range one {
		if strings.HasPrefix(p, "notes/") && word.MatchString(one[p]) != word.MatchString(ten[p]) {
			t.Errorf("%s: mentions a deadline at one scale only", p)
		}
		if items := func(s string) int { return strings.Count(s, "\n- item ") }; strings.HasPrefix(p, "notes/") && items(ten[p]) != 10*items(one[p]) {
			t.Errorf("%s: %d items at scale 10, %d at scale 1", p, items(ten[p]), items(one[p]))
		}
		if strings.HasPrefix(p, "data/sales-") && len(lines(ten[p]))-1 != 10*(len(lines(one[p]))-1) {
			t.Errorf("%s: %d rows at scale 10, %d at scale 1", p, len(lines(ten[p]))-1, len(lines(one[p]))-1)
		}
		if strings.HasPrefix(p, "config/") || strings.HasPrefix(p, "data/orders/") {
			var a, b struct {
				Name, Status string
				Port         int
				Debug        bool
				Items        []any
			}
			if err := json.Unmarshal([]byte(one[p]), &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(ten[p]), &b); err != nil {
				t.Fatalf("%s at scale 10: %v", p, err)
			}
			if a.Name != b.Name || a.Port != b.Port || a.Debug != b.Debug || a.Status != b.Status || len(b.Items) != 10*len(a.Items) {
				t.Errorf("%s: %+v at scale 1, %+v at scale 10", p, a, b)
			}
		}
		if strings.HasPrefix(p, "docs/") && strings.Count(ten[p], "version: ") != 1 {
			t.Errorf("%s: a version line more at scale 10", p)
		}
	}
	for _, scale := range []int{1, 10} {
		var n int
		for l := range strings.SplitSeq(strings.TrimSpace(string(memoryGraph(scale))), "\n") {
			var en struct {
				Type, Name   string
				Observations []string
			}
			if err := json.Unmarshal([]byte(l), &en); err != nil {
				t.Fatal(err)
			}
			if en.Type != "entity" {
				continue
			}
			n++
			if len(en.Observations) != 2*scale {
				t.Errorf("scale %d: %s has %d observations", scale, en.Name, len(en.Observations))
			}
			teams := 0
			for _, o := range en.Observations {
				if strings.Contains(strings.ToLower(o), "team:") {
					teams++
				}
			}
			if teams != 1 {
				t.Errorf("scale %d: %s has %d team observations", scale, en.Name, teams)
			}
		}
		if n != people {
			t.Errorf("scale %d: %d people", scale, n)
		}
	}
}
