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
