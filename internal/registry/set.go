package registry

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// EnvRegistry names the registries when no -registry flag is given: one
// URL, or several separated by commas or spaces, asked in that order.
const EnvRegistry = "JUNCTION_REGISTRY"

// Set is several registries, asked in order: a company's own first,
// then the official one.
type Set []*Client

// NewSet makes a Set from URLs, in order; none means [DefaultURL]. Each
// entry may hold several URLs separated by commas or spaces. A URL given
// twice is asked once.
func NewSet(urls []string) (Set, error) {
	var list []string
	for _, u := range urls {
		list = append(list, strings.FieldsFunc(u, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })...)
	}
	if len(list) == 0 {
		list = []string{DefaultURL}
	}
	var s Set
	seen := map[string]bool{}
	for _, u := range list {
		c, err := New(u)
		if err != nil {
			return nil, err
		}
		key := c.base.String()
		if seen[key] {
			continue
		}
		seen[key] = true
		s = append(s, c)
	}
	return s, nil
}

// URLs lists the registries, redacted.
func (s Set) URLs() []string {
	out := make([]string, len(s))
	for i, c := range s {
		out[i] = c.URL()
	}
	return out
}

// Found is a server version and the registry that answered with it.
type Found struct {
	ServerResponse
	// Registry is the registry's base URL, redacted.
	Registry string `json:"registry"`
}

// Search asks every registry, in order, and merges the answers: a name
// that several registries list is taken from the first of them (a
// company registry shadows the official one). Results keep the order
// each registry gave, registry by registry. When some registries fail,
// Search returns what the others found and an error naming the failures;
// check len(results) to tell a partial answer from none.
func (s Set) Search(ctx context.Context, query string, o SearchOptions) ([]Found, error) {
	var out []Found
	var errs []error
	owner := map[string]string{} // server name → the registry that listed it first
	for _, c := range s {
		list, err := c.Search(ctx, query, o)
		if err != nil {
			errs = append(errs, err)
		}
		for _, r := range list {
			if reg, ok := owner[r.Server.Name]; ok && reg != c.URL() {
				continue
			}
			owner[r.Server.Name] = c.URL()
			out = append(out, Found{ServerResponse: r, Registry: c.URL()})
		}
	}
	if o.Max > 0 && len(out) > o.Max {
		out = out[:o.Max]
	}
	return out, errors.Join(errs...)
}

// Get asks the registries in order for name at version ("" for the
// latest) and returns the first answer. A registry that does not have it
// passes to the next; one that fails otherwise (unreachable, an error,
// a malformed answer) stops the search: falling through to a later
// registry would quietly install what an earlier, preferred one may have
// pinned or withdrawn.
func (s Set) Get(ctx context.Context, name, version string) (*Found, error) {
	var missing []string
	for _, c := range s {
		r, err := c.Get(ctx, name, version)
		if errors.Is(err, ErrNotFound) {
			missing = append(missing, c.URL())
			continue
		}
		if err != nil {
			if len(s) > 1 {
				return nil, fmt.Errorf("%w\n(later registries were not asked: an earlier registry decides first; fix it or leave it out of -registry/%s)", err, EnvRegistry)
			}
			return nil, err
		}
		return &Found{ServerResponse: *r, Registry: c.URL()}, nil
	}
	if version != "" && version != "latest" {
		return nil, fmt.Errorf("%s@%s: version %w in %s; \"junction registry show %s\" shows the latest version", name, version, ErrNotFound, strings.Join(missing, ", "), name)
	}
	return nil, fmt.Errorf("%s: %w in %s; \"junction registry search WORD\" finds a server's exact name", name, ErrNotFound, strings.Join(missing, ", "))
}
