package hostconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/junction-mcp/junction/internal/atomicfile"
)

// Confine checks a file that connect or disconnect is about to read or
// write for the project and local scopes: when path lies inside the
// project directory (l.Dir), it must still lie inside it once symbolic
// links are followed. A repository is not to be trusted: its .mcp.json
// may be a link to ~/.cursor/mcp.json, and connect would then rewrite
// that user-wide file and copy its servers, with their secrets, into the
// project. A path outside the project directory (named with -file or
// -config) is the user's own choice and is not checked. Confine returns
// nil for the user scope.
func (l *Location) Confine(path string) error {
	if l.Dir == "" {
		return nil
	}
	dir := filepath.Clean(l.Dir)
	path = filepath.Clean(path)
	if !within(dir, path) {
		return nil
	}
	realDir, err := resolve(dir, 0)
	if err != nil {
		return fmt.Errorf("project directory %s: %w", dir, err)
	}
	real, err := resolve(path, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if within(realDir, real) {
		return nil
	}
	link, target := firstLink(dir, path)
	what := fmt.Sprintf("%s is a symbolic link to %s, so %s is really %s", link, target, path, real)
	if link == path {
		what = fmt.Sprintf("%s is a symbolic link to %s", path, real)
	}
	return fmt.Errorf("%s, outside the project %s. connect and disconnect -scope %s read and write only files inside the project, so that a repository cannot point them at another file (here %s would be rewritten, and its servers and their secrets copied into the project); nothing was changed. Replace the link with a file of the project's own, or connect the file it points to with the host and scope it belongs to (such as -scope user)",
		what, dir, l.Scope, real)
}

// within reports whether path is dir or lies under it (both clean).
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	if err != nil || filepath.IsAbs(rel) {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// resolve returns path with every symbolic link followed, as
// filepath.EvalSymlinks, but also for a path that does not exist yet
// (junction's config before connect writes it): the missing tail is kept
// as it is written, and a dangling link is followed to where it points,
// since a write through it would create its target.
func resolve(path string, depth int) (string, error) {
	if depth > 40 {
		return "", errors.New("too many levels of symbolic links")
	}
	real, err := filepath.EvalSymlinks(path)
	if err == nil {
		return real, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		return resolve(target, depth+1)
	}
	parent := filepath.Dir(path)
	if parent == path {
		return path, nil
	}
	rp, err := resolve(parent, depth+1)
	if err != nil {
		return "", err
	}
	return filepath.Join(rp, filepath.Base(path)), nil
}

// firstLink returns the first symbolic link on the way from dir down to
// path (path itself, or a directory such as .vscode) and what it points
// to, for the message; path and its resolution when none is found.
func firstLink(dir, path string) (link, target string) {
	rel, err := filepath.Rel(dir, path)
	if err == nil {
		cur := dir
		for _, part := range strings.Split(rel, string(filepath.Separator)) {
			cur = filepath.Join(cur, part)
			if fi, err := os.Lstat(cur); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				if t, err := os.Readlink(cur); err == nil {
					return cur, t
				}
			}
		}
	}
	real, _ := resolve(path, 0)
	return path, real
}

// confineHost is [Location.Confine] for the host's file and its backups:
// they belong to the project in the project scope only. In the local
// scope they are ~/.claude.json, the user's own file, which may well be
// a link into a dotfiles checkout, even when the project is the home
// directory.
func (l *Location) confineHost(path string) error {
	if l.Scope != ScopeProject {
		return nil
	}
	return l.Confine(path)
}

// writeConfined is [atomicfile.Write] for junction's config: it checks the
// path with [Location.Confine] again just before writing. atomicfile.Write
// renames onto the path the links lead to, so the check is of the very
// file replaced: one inside the project, never a link's target outside.
func (l *Location) writeConfined(path string, data []byte, mode fs.FileMode) error {
	if err := l.Confine(path); err != nil {
		return err
	}
	return atomicfile.Write(path, data, mode)
}

// writeHost is writeConfined for the host's file and its backups
// (see confineHost).
func (l *Location) writeHost(path string, data []byte, mode fs.FileMode) error {
	if err := l.confineHost(path); err != nil {
		return err
	}
	return atomicfile.Write(path, data, mode)
}
