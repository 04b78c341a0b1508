package oauth

import (
	"fmt"
	"sync"
	"testing"

	"golang.org/x/oauth2"
)

// TestFileStoreConcurrentWriters: stores opened separately on one
// directory (as two processes do: each its own file handles and memory
// lock) save at the same time; no entry is lost.
func TestFileStoreConcurrentWriters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const writers, each = 4, 15
	var wg sync.WaitGroup
	for w := range writers {
		s := NewFileStore(dir)
		wg.Go(func() {
			for i := range each {
				e := &Entry{Resource: fmt.Sprintf("https://s%d-%d.example/mcp", w, i), ClientID: "c", Token: &oauth2.Token{AccessToken: "t"}}
				if err := s.Save(e); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	list, err := NewFileStore(dir).List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != writers*each {
		t.Errorf("%d entries after %d saves by %d writers, want all of them", len(list), writers*each, writers)
	}
}

// TestUserStore: each user's view holds their entries only, apart from
// the hub's own entry for the same resource, in a file store and in
// memory; deleting one user's entry leaves the others.
func TestUserStore(t *testing.T) {
	t.Parallel()
	for name, base := range map[string]Store{"file": NewFileStore(t.TempDir()), "memory": &MemoryStore{}} {
		const res = "https://up.example/mcp"
		tok := func(s string) *Entry { return &Entry{Resource: res, Token: &oauth2.Token{AccessToken: s}} }
		alice, bob := UserStore(base, "alice"), UserStore(base, "bob#user=x")
		for _, step := range []struct {
			s Store
			e *Entry
		}{{base, tok("hub")}, {alice, tok("a")}, {bob, tok("b")}} {
			if err := step.s.Save(step.e); err != nil {
				t.Fatal(err)
			}
		}
		for who, want := range map[Store]string{base: "hub", alice: "a", bob: "b"} {
			e, err := who.Load(res)
			if err != nil || e == nil || e.Token.AccessToken != want || e.Resource != res {
				t.Errorf("%s: Load = %+v, %v; want token %s", name, e, err, want)
			}
		}
		if e, _ := UserStore(base, "carol").Load(res); e != nil {
			t.Errorf("%s: carol sees %+v", name, e)
		}
		if l, _ := alice.List(); len(l) != 1 || l[0].User != "alice" {
			t.Errorf("%s: alice's list %+v", name, l)
		}
		if all, _ := base.List(); len(all) != 3 {
			t.Errorf("%s: the store lists %d entries, want 3", name, len(all))
		}
		if ok, err := alice.Delete(res); !ok || err != nil {
			t.Fatalf("%s: delete: %v %v", name, ok, err)
		}
		if e, _ := alice.Load(res); e != nil {
			t.Errorf("%s: alice's entry is still there", name)
		}
		if e, _ := bob.Load(res); e == nil || e.Token.AccessToken != "b" {
			t.Errorf("%s: bob's entry went with alice's: %+v", name, e)
		}
		if e, _ := base.Load(res); e == nil || e.Token.AccessToken != "hub" {
			t.Errorf("%s: the hub's entry went with alice's: %+v", name, e)
		}
	}
}
