package diagram

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode"

	"github.com/junction-mcp/junction/internal/atomicfile"
)

// library is the directory of saved diagrams, one <name>.yaml file each.
// Nothing outside it is ever read or written: names are checked before
// they become paths.
type library struct {
	dir string
}

const diagramExt = ".yaml"

var namePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`) })

// checkName applies DiPeO's push_as checks, in its order and with its
// texts, and then junction's own stricter pattern.
func checkName(name string) error { return checkNameParam("push_as", name) }

// checkNameParam is [checkName] for a name given as the parameter param
// (push_as, or diagram and id, which name a saved diagram): its errors
// name that parameter.
func checkNameParam(param, name string) error {
	switch {
	case strings.ContainsAny(name, `/\`) || strings.Contains(name, ".."):
		return fmt.Errorf("Invalid filename: path separators and '..' are not allowed in %s parameter", param)
	case strings.TrimSpace(name) == "" || strings.HasPrefix(name, "."):
		return fmt.Errorf("Invalid filename: %s must be a valid filename (non-empty, not starting with '.')", param)
	case strings.ContainsFunc(name, func(r rune) bool { return r == 0 || (unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r') }):
		if param == "push_as" {
			return errors.New("Invalid filename: null bytes and control characters are not allowed") // DiPeO's text
		}
		return fmt.Errorf("Invalid filename: null bytes and control characters are not allowed in %s parameter", param)
	case !namePattern().MatchString(name):
		return fmt.Errorf("Invalid filename: %s may contain only letters, digits, '.', '_' and '-' (at most 128 characters)", param)
	}
	return nil
}

// normName strips a .yaml or .yml suffix, so "flow.yaml" and "flow" are
// the same diagram.
func normName(name string) string {
	for _, ext := range []string{".yaml", ".yml"} {
		if strings.HasSuffix(name, ext) && len(name) > len(ext) {
			return strings.TrimSuffix(name, ext)
		}
	}
	return name
}

func (l *library) path(name string) (string, error) {
	name = normName(name)
	if err := checkName(name); err != nil {
		return "", err
	}
	return filepath.Join(l.dir, name+diagramExt), nil
}

// save writes src as the diagram called name: to a temporary file in the
// same directory, then renamed over the old one.
func (l *library) save(name string, src []byte) error {
	path, err := l.path(name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return fmt.Errorf("saving diagram %s: %w", name, err)
	}
	if err := atomicfile.Write(path, src, 0o600); err != nil {
		return fmt.Errorf("saving diagram %s: %w", name, err)
	}
	return nil
}

// load returns the source of the diagram called name.
func (l *library) load(name string) ([]byte, error) {
	path, err := l.path(name)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("Diagram not found: %s", normName(name))
	}
	return b, err
}

// names lists the saved diagrams, sorted.
func (l *library) names() ([]string, error) {
	entries, err := os.ReadDir(l.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if e.Type().IsRegular() && strings.HasSuffix(n, diagramExt) && checkName(strings.TrimSuffix(n, diagramExt)) == nil {
			out = append(out, strings.TrimSuffix(n, diagramExt))
		}
	}
	sort.Strings(out)
	return out, nil
}
