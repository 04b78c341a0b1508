package files

import (
	"errors"
	"path"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMapPath(t *testing.T) {
	tests := []struct {
		in      string // as net/http decoded it
		want    string
		wantErr error
	}{
		{"/a.txt", "a.txt", nil},
		{"/dir/sub/a.txt", "dir/sub/a.txt", nil},
		{"/a%20b.jpg", "a b.jpg", nil}, // the original client's double escaping, once decoded
		{"/a b.jpg", "a b.jpg", nil},   // curl's single escaping
		{"/a/../b", "b", nil},
		{"/x:y", "x:y", nil},
		{"/", "", ErrEmptyPath},
		{"", "", ErrEmptyPath},
		{"/.", "", ErrEmptyPath},
		{"/..", "", ErrInvalidPath},
		{"/../etc/passwd", "", ErrInvalidPath},
		{"/%2e%2e/etc/passwd", "", ErrInvalidPath},
		{"/a/%2E%2E/%2E%2E/x", "", ErrInvalidPath},
		{"/a/..%2F..%2Fx", "", ErrInvalidPath},
		{"//etc/passwd", "", ErrEscapesRoot},
		{"/%2Fetc/passwd", "", ErrEscapesRoot},
		{"/..%5c..%5cx", "", ErrInvalidPath},
		{"/a%00b", "", ErrInvalidPath},
		{"/%zz", "", ErrInvalidPath},
	}
	for _, tt := range tests {
		got, err := MapPath(tt.in)
		if got != tt.want || !errors.Is(err, tt.wantErr) {
			t.Errorf("MapPath(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestBuildURL(t *testing.T) {
	tests := []struct {
		host, remote string
		port         int
		want         string
		wantErr      string
	}{
		{"127.0.0.1", "a b.jpg", 8080, "http://127.0.0.1:8080/a%2520b.jpg", ""},
		{"h", "/dir//x/", 1, "http://h:1/dir//x", ""}, // segments kept as they are
		{"h", "", 65535, "http://h:65535/", ""},
		{"h", "\\win\\", 80, "http://h:80/win", ""},
		{"::1", "f", 80, "http://[::1]:80/f", ""},
		{"[::1]", "f", 80, "http://[::1]:80/f", ""},
		{"h", "100%.txt", 80, "http://h:80/100%2525.txt", ""},
		{" ", "f", 80, "", "peer host is required"},
		{"h", "f", 0, "", "port must be between 1 and 65535"},
		{"h", "f", 65536, "", "port must be between 1 and 65535"},
	}
	for _, tt := range tests {
		u, err := BuildURL(tt.host, tt.port, tt.remote)
		var got, gotErr string
		if err != nil {
			gotErr = err.Error()
		} else {
			got = u.String()
		}
		if got != tt.want || gotErr != tt.wantErr {
			t.Errorf("BuildURL(%q, %d, %q) = %q, %q; want %q, %q", tt.host, tt.port, tt.remote, got, gotErr, tt.want, tt.wantErr)
		}
	}
}

// FuzzMapPath checks that no input maps outside the root.
func FuzzMapPath(f *testing.F) {
	for _, s := range []string{"/a", "/../x", "/%2e%2e/x", "//x", "/a/./b/../../..", "/%252e%252e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := MapPath(in)
		if err != nil {
			return
		}
		if got == "" || strings.HasPrefix(got, "/") || got == ".." || strings.HasPrefix(got, "../") || path.Clean(got) != got || strings.ContainsAny(got, "\\\x00") {
			t.Fatalf("MapPath(%q) = %q: not a clean path inside the root", in, got)
		}
	})
}
