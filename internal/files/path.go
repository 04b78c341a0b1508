package files

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strings"
)

// Errors of [MapPath]. Each is answered with 400 Bad Request.
var (
	ErrEmptyPath   = errors.New("empty path")
	ErrInvalidPath = errors.New("invalid path")
	ErrEscapesRoot = errors.New("path escapes fileroot")
)

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
