package junction_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// logRecorder is a slog.Handler that keeps every record's message and
// attributes, for counting log lines.
type logRecorder struct {
	mu   sync.Mutex
	recs []loggedRecord
}

type loggedRecord struct {
	msg   string
	attrs map[string]string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *logRecorder) WithGroup(string) slog.Handler            { return r }

func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	lr := loggedRecord{msg: rec.Message, attrs: map[string]string{}}
	rec.Attrs(func(a slog.Attr) bool {
		lr.attrs[a.Key] = a.Value.String()
		return true
	})
	r.mu.Lock()
	r.recs = append(r.recs, lr)
	r.mu.Unlock()
	return nil
}

// since returns, sorted, "name from hidden_from [served_from]" for each
// record with message msg after the first mark records.
func (r *logRecorder) since(mark int, msg string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, lr := range r.recs[mark:] {
		if lr.msg == msg {
			s := lr.attrs["name"] + " from " + lr.attrs["hidden_from"]
			if w := lr.attrs["served_from"]; w != "" {
				s += " by " + w
			}
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

func (r *logRecorder) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.recs)
}

// sharedResourcePack is a source serving res://shared/1 and res://shared/2,
// which every such source also serves, and a resource of its own.
func sharedResourcePack(name string) *junction.Pack {
	p := junction.NewPack(name)
	read := func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	}
	for _, uri := range []string{"res://shared/1", "res://shared/2", "res://" + name} {
		p.AddResource(&mcp.Resource{URI: uri, Name: uri}, read)
	}
	return p
}

// TestCollisionLoggedOncePerCollision: five sources sharing two resource
// URIs log each collision once, when it appears, however many times the
// hub rebuilds its table afterwards (refreshes, and the SetPresets, SetLock
// and Replace of a reload); a collision whose winner changes is logged
// again, one that ends is logged ending once, and one that comes back is
// logged again.
func TestCollisionLoggedOncePerCollision(t *testing.T) {
	rec := &logRecorder{}
	h := junction.New(&junction.Options{Logger: slog.New(rec)})
	t.Cleanup(func() { h.Close() })
	ctx := t.Context()
	for i := 1; i <= 5; i++ {
		name := fmt.Sprintf("s%d", i)
		if err := h.Add(ctx, name, sharedResourcePack(name), nil); err != nil {
			t.Fatal(err)
		}
	}
	// What a start and a reload do to the table, several times over.
	for range 3 {
		if err := h.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if err := h.SetPresets(map[string][]string{"p": {"x"}}); err != nil {
			t.Fatal(err)
		}
		if err := h.SetLock(nil); err != nil {
			t.Fatal(err)
		}
		if err := h.Replace(ctx, "s3", sharedResourcePack("s3"), nil); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	for _, uri := range []string{"res://shared/1", "res://shared/2"} {
		for _, loser := range []string{"s2", "s3", "s4", "s5"} {
			want = append(want, uri+" from "+loser+" by s1")
		}
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, rec.since(0, "name collision")); diff != "" {
		t.Errorf("name collision warnings over five adds and three reloads (-want +got):\n%s", diff)
	}
	if got := len(h.Collisions()); got != 8 {
		t.Errorf("Collisions() has %d entries, want 8", got)
	}

	// s1 goes: s2 serves the URIs now, so the collisions of s3-s5 are
	// logged again with their new winner, and s2's end.
	mark := rec.mark()
	if err := h.Remove("s1"); err != nil {
		t.Fatal(err)
	}
	want = []string{
		"res://shared/1 from s3 by s2", "res://shared/1 from s4 by s2", "res://shared/1 from s5 by s2",
		"res://shared/2 from s3 by s2", "res://shared/2 from s4 by s2", "res://shared/2 from s5 by s2",
	}
	if diff := cmp.Diff(want, rec.since(mark, "name collision")); diff != "" {
		t.Errorf("name collision warnings after removing the winner (-want +got):\n%s", diff)
	}
	wantEnded := []string{"res://shared/1 from s2", "res://shared/2 from s2"}
	if diff := cmp.Diff(wantEnded, rec.since(mark, "name collision ended")); diff != "" {
		t.Errorf("ended collisions after removing the winner (-want +got):\n%s", diff)
	}

	// Only s2 left: every collision ends, once.
	mark = rec.mark()
	for _, name := range []string{"s3", "s4", "s5"} {
		if err := h.Remove(name); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rec.since(mark, "name collision ended"); len(got) != 6 {
		t.Errorf("ended collisions after removing s3-s5: %q, want 6", got)
	}
	if got := rec.since(mark, "name collision"); len(got) != 0 {
		t.Errorf("name collision warnings while only removing sources: %q", got)
	}

	// A collision that comes back is logged again.
	mark = rec.mark()
	if err := h.Add(ctx, "s3", sharedResourcePack("s3"), nil); err != nil {
		t.Fatal(err)
	}
	want = []string{"res://shared/1 from s3 by s2", "res://shared/2 from s3 by s2"}
	if diff := cmp.Diff(want, rec.since(mark, "name collision")); diff != "" {
		t.Errorf("name collision warnings after the collision came back (-want +got):\n%s", diff)
	}
}
