package junction_test

import (
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestApplyInOneStep: a tool that moves from one source to another in
// one Apply (the old source removed, the new one put in, under the same
// exposed name) is served all along, first by the old source and then by
// the new one, and the hub never holds both (no collision is logged), as
// it would if the two changes were made one after the other.
func TestApplyInOneStep(t *testing.T) {
	rec := &logRecorder{}
	h := junction.New(&junction.Options{Logger: slog.New(rec)})
	t.Cleanup(func() { h.Close() })
	never := &junction.SourceOptions{Prefix: junction.PrefixNever}
	if err := h.Add(t.Context(), "old", newPack("old", "move", "stay"), never); err != nil {
		t.Fatal(err)
	}
	v, err := h.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, v, nil)

	// A caller calls "move" until it has seen the new source answer.
	var (
		mu      sync.Mutex
		answers []string
	)
	first := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 100000; i++ {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "move", Arguments: map[string]any{"text": "x"}})
			var text string
			switch {
			case err != nil:
				text = "error: " + err.Error()
			case len(res.Content) != 1:
				text = "content blocks: " + string(rune('0'+len(res.Content)))
			default:
				text = res.Content[0].(*mcp.TextContent).Text
				if res.IsError {
					text = "tool error: " + text
				}
			}
			mu.Lock()
			answers = append(answers, text)
			mu.Unlock()
			if i == 0 {
				close(first)
			}
			if strings.Contains(text, "new/move") || strings.HasPrefix(text, "error") || strings.HasPrefix(text, "tool error") {
				return
			}
		}
	}()
	<-first
	mark := rec.mark()
	err = h.Apply(t.Context(), junction.Changes{
		Put:    []junction.Put{{Name: "new", Source: newPack("new", "move"), Options: never}, {Name: "extra", Source: newPack("extra", "more"), Options: never}},
		Remove: []string{"old"},
	})
	if err != nil {
		t.Fatal(err)
	}
	<-done
	mu.Lock()
	defer mu.Unlock()
	for _, a := range answers {
		if !strings.Contains(a, "old/move") && !strings.Contains(a, "new/move") {
			t.Errorf("a call of move during the Apply answered %q", a)
		}
	}
	if last := answers[len(answers)-1]; !strings.Contains(last, "new/move") {
		t.Errorf("the last call answered %q, want the new source's", last)
	}
	if got := rec.since(mark, "name collision"); len(got) != 0 {
		t.Errorf("collisions logged during one Apply: %q", got)
	}
	if got := listNames(t, cs); !slices.Equal(got, []string{"more", "move"}) {
		t.Errorf("tools after the Apply = %q, want move and more", got)
	}
	if got := h.SourceNames(); !slices.Equal(got, []string{"new", "extra"}) {
		t.Errorf("sources after the Apply = %q", got)
	}
}

// TestApplyRefusedChangesNothing: changes with one wrong part change
// nothing, and the error says which part.
func TestApplyRefusedChangesNothing(t *testing.T) {
	h := newHub(t)
	add(t, h, "a", newPack("a", "one"), junction.PrefixAlways)
	good := junction.Put{Name: "b", Source: newPack("b", "two")}
	for _, tc := range []struct {
		name string
		ch   junction.Changes
		want string
	}{
		{"bad name", junction.Changes{Put: []junction.Put{good, {Name: "x__y", Source: newPack("x", "three")}}, Remove: []string{"a"}}, `"x__y"`},
		{"empty name", junction.Changes{Put: []junction.Put{good, {Source: newPack("x", "three")}}}, `""`},
		{"no source", junction.Changes{Put: []junction.Put{good, {Name: "c"}}}, `"c": no source`},
		{"twice", junction.Changes{Put: []junction.Put{good, good}}, `"b": given twice`},
		{"put and removed", junction.Changes{Put: []junction.Put{good}, Remove: []string{"b"}}, `"b": both put and removed`},
		{"options of a removed source", junction.Changes{Put: []junction.Put{good}, Remove: []string{"a"}, Options: map[string]junction.SourceOptions{"a": {}}}, `"a": not in the hub`},
		{"options of an unknown source", junction.Changes{Options: map[string]junction.SourceOptions{"nosuch": {}}}, `"nosuch": not in the hub`},
	} {
		err := h.Apply(t.Context(), tc.ch)
		if !errors.Is(err, junction.ErrChangesRefused) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Apply = %v, want ErrChangesRefused naming %s", tc.name, err, tc.want)
		}
		if got := h.SourceNames(); !slices.Equal(got, []string{"a"}) {
			t.Errorf("%s: sources after a refused Apply = %q", tc.name, got)
		}
	}
	if res, err := h.Call(t.Context(), "a__one", json.RawMessage(`{"text":"in"}`)); err != nil || res.IsError {
		t.Errorf("a's tool after the refused changes: %v, %v", res, err)
	}
	// Options for a source put in by the same changes are fine.
	err := h.Apply(t.Context(), junction.Changes{Put: []junction.Put{good}, Options: map[string]junction.SourceOptions{"b": {Prefix: junction.PrefixNever}}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := h.Call(t.Context(), "two", json.RawMessage(`{"text":"in"}`)); err != nil || res.IsError {
		t.Errorf("b's tool, unprefixed by the Options of its Apply: %v, %v", res, err)
	}
}

// TestApplyConcurrently: Applies, adds, removes, refreshes and preset
// changes from several goroutines at once, with calls going on, all end
// (no deadlock between the swaps and the shared rebuilds), and the hub
// ends with the sources the last changes left.
func TestApplyConcurrently(t *testing.T) {
	h := newHub(t)
	add(t, h, "base", newPack("base", "stay"), junction.PrefixNever)
	ctx := t.Context()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			name := string(rune('a' + w))
			for i := range 50 {
				var err error
				switch i % 5 {
				case 0:
					err = h.Apply(ctx, junction.Changes{Put: []junction.Put{{Name: name, Source: newPack(name, "t"+name)}}})
				case 1:
					err = h.Refresh(ctx)
				case 2:
					err = h.SetPresets(map[string][]string{name: {"stay"}})
				case 3:
					err = h.Apply(ctx, junction.Changes{Remove: []string{name}, Put: []junction.Put{{Name: name + "2", Source: newPack(name+"2", "u"+name)}}})
				case 4:
					err = h.Remove(name + "2")
				}
				if err != nil {
					t.Errorf("worker %s, step %d: %v", name, i, err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 200 {
			if res, err := h.Call(ctx, "stay", json.RawMessage(`{"text":"x"}`)); err != nil || res.IsError {
				t.Errorf("a call during the changes: %v, %v", res, err)
				return
			}
		}
	})
	wg.Wait()
	if got := h.SourceNames(); !slices.Equal(got, []string{"base"}) {
		t.Errorf("sources after the changes = %q, want only base", got)
	}
}
