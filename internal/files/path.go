package files

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Errors of [MapPath]. Each is answered with 400 Bad Request.
var (
	ErrEmptyPath   = errors.New("empty path")
	ErrInvalidPath = errors.New("invalid path")
	ErrEscapesRoot = errors.New("path escapes fileroot")
)

// Defaults of [PathLimits].
const (
	// DefaultMaxPathBytes bounds a whole path: Linux's PATH_MAX.
	DefaultMaxPathBytes = 4096
	// DefaultMaxDepth bounds the number of path segments: deep enough for
	// any source tree, far from what a file system or a walker chokes on.
	DefaultMaxDepth = 64
	// MaxNameBytes bounds one segment: NAME_MAX of the common Unix file
	// systems; a longer name could not be created anyway.
	MaxNameBytes = 255
)

// PathLimits bound the paths a listener serves and stores and the entry
// names of a tarball. Zero fields take the defaults.
type PathLimits struct {
	// MaxBytes bounds the length of the cleaned relative path.
	MaxBytes int
	// MaxDepth bounds the number of its segments ("a/b/c" is 3).
	MaxDepth int
}

func (l PathLimits) withDefaults() PathLimits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxPathBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	return l
}

// PathLimitError is a path over one of the [PathLimits] (or over
// [MaxNameBytes]). Limit is the option that sets it: "max-path-bytes",
// "max-depth" or "name length".
type PathLimitError struct {
	Limit    string
	Got, Max int
	Name     string // the start of the segment over MaxNameBytes
}

// StatusCode is the HTTP answer: 414 URI Too Long for a length, 400 for
// the depth.
func (e *PathLimitError) StatusCode() int {
	if e.Limit == "max-depth" {
		return http.StatusBadRequest
	}
	return http.StatusRequestURITooLong
}

func (e *PathLimitError) Error() string {
	switch e.Limit {
	case "max-depth":
		return fmt.Sprintf("path too deep: %d levels, over the limit of %d (max-depth); use a shallower path", e.Got, e.Max)
	case "name length":
		return fmt.Sprintf("path segment %q... too long: %d bytes, over the limit of %d per name; use a shorter name", e.Name, e.Got, e.Max)
	}
	return fmt.Sprintf("path too long: %d bytes, over the limit of %d (max-path-bytes); use a shorter path", e.Got, e.Max)
}

// Check returns a [*PathLimitError] if rel, a clean slash-separated
// relative path, is over a limit.
func (l PathLimits) Check(rel string) error {
	l = l.withDefaults()
	if len(rel) > l.MaxBytes {
		return &PathLimitError{Limit: "max-path-bytes", Got: len(rel), Max: l.MaxBytes}
	}
	if depth := strings.Count(rel, "/") + 1; depth > l.MaxDepth {
		return &PathLimitError{Limit: "max-depth", Got: depth, Max: l.MaxDepth}
	}
	for seg := range strings.SplitSeq(rel, "/") {
		if len(seg) > MaxNameBytes {
			return &PathLimitError{Limit: "name length", Got: len(seg), Max: MaxNameBytes, Name: truncateName(seg, 16)}
		}
	}
	return nil
}

// truncateName returns at most max bytes of name, cut at a rune boundary.
func truncateName(name string, max int) string {
	if len(name) <= max {
		return name
	}
	for max > 0 && !utf8.RuneStart(name[max]) {
		max--
	}
	return name[:max]
}

// MapPath turns a request's URL path (as net/http decoded it) into a
// slash-separated path relative to the root, or an error. Like the
// original diode listener it percent-decodes the path once more, then
// cleans it ("a/../b" is "b"; "../b" is refused). Unlike the original it
// also refuses backslashes, NUL bytes, drive letters and paths still
// absolute after decoding ("/%2Fetc/passwd"). Symbolic links are checked
// later, by the [os.Root] every access goes through.
func MapPath(urlPath string) (string, error) {
	p, err := url.PathUnescape(urlPath)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalidPath, err)
	}
	if strings.ContainsAny(p, "\\\x00") {
		return "", ErrInvalidPath
	}
	p = strings.TrimPrefix(p, "/")
	if strings.HasPrefix(p, "/") || filepath.VolumeName(filepath.FromSlash(p)) != "" {
		return "", ErrEscapesRoot // "//etc/passwd", "C:/x" on Windows: absolute after decoding
	}
	p = path.Clean(p)
	switch {
	case p == "." || p == "":
		return "", ErrEmptyPath
	case p == ".." || strings.HasPrefix(p, "../"):
		return "", ErrInvalidPath
	}
	return p, nil
}

// EscapePath builds the URL path the original diode client sends for a
// remote path: leading and trailing "/" and "\" trimmed, each segment
// escaped with url.PathEscape, joined with a leading "/". An empty path is
// "/". The result is still to be escaped by net/url (see [BuildURL]).
func EscapePath(remote string) string {
	remote = strings.Trim(remote, "/\\")
	if remote == "" {
		return "/"
	}
	segs := strings.Split(remote, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "/" + strings.Join(segs, "/")
}

// BuildURL returns the URL for remote_path on a listener at host:port, as
// the original's filetransfer.BuildHTTPURL does: the path escaped per
// segment and then, as url.URL.Path, escaped again. IPv6 hosts may be given
// with or without brackets.
func BuildURL(host string, port int, remote string) (*url.URL, error) {
	host = strings.TrimSpace(host)
	if host == "" {
		return nil, errors.New("peer host is required")
	}
	if port < 1 || port > 65535 {
		return nil, errors.New("port must be between 1 and 65535")
	}
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return &url.URL{Scheme: "http", Host: joinHostPort(h, port), Path: EscapePath(remote)}, nil
}

func joinHostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return fmt.Sprintf("[%s]:%d", host, port)
	}
	return fmt.Sprintf("%s:%d", host, port)
}
