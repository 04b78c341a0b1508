package toolsearch

import (
	"reflect"
	"testing"
)

func TestNearTerms(t *testing.T) {
	t.Parallel()
	x := New()
	x.SetSource(Source{Name: "s"}, []Tool{
		{Name: "a", Description: "repository"},
		{Name: "b", Description: "kubernetes rollout"},
	})
	x.mu.RLock()
	defer x.mu.RUnlock()
	for w, want := range map[string][]string{
		"reopsitori":  {"repositori"}, // two neighbours swapped
		"repsitori":   {"repositori"}, // a letter deleted
		"repositorie": {"repositori"}, // a letter inserted
		"kubernat":    {"kubernet"},   // a letter replaced
		"repositori":  nil,            // the word itself is not a neighbour
		"rolout":      {"rollout"},
		"rollot":      {"rollout"},
		"roll":        nil, // two edits away
		"rol":         nil, // too short to guess from
		"r0llout":     nil, // not letters a-z
	} {
		var got []string
		for _, id := range x.nearTermsLocked(w) {
			got = append(got, x.termText[id])
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("nearTermsLocked(%q) = %q, want %q", w, got, want)
		}
	}
}

func TestTypoSearch(t *testing.T) {
	t.Parallel()
	x := New()
	x.SetSource(Source{Name: "s"}, []Tool{
		{Name: "restart_rollout", Description: "Restart the rollout of a Kubernetes deployment."},
		{Name: "clone_repository", Description: "Clone a git repository."},
		{Name: "slice", Description: "Take a slice of a list."},
	})
	r := mustSearch(t, x, "restrat the kuberntes rolout", SearchOptions{})
	if len(r.Hits) == 0 || r.Hits[0].Name != "restart_rollout" {
		t.Errorf("misspelt query: got %v, want restart_rollout first", names(r))
	}
	// A word the dictionary holds is taken as it is: "slice" does not
	// also look for its neighbours.
	if r := mustSearch(t, x, "slice", SearchOptions{}); !reflect.DeepEqual(names(r), []string{"slice"}) {
		t.Errorf("known word: got %v, want [slice]", names(r))
	}
	// The words tried are bounded.
	q := ""
	for range maxQueryTerms {
		q += "zzzzqx "
	}
	mustSearch(t, x, q, SearchOptions{})
}
