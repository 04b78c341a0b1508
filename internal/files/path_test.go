package files

import (
	"errors"
	"path"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/junction-mcp/junction/internal/reaper"
)

func TestMain(m *testing.M) {
	reaper.RunIfReaper() // the reapers of deploy commands run this binary
	goleak.VerifyTestMain(m)
}

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

// FuzzMapPath checks that no input maps outside the root, and that a
// path the default limits accept is within them.
func FuzzMapPath(f *testing.F) {
	for _, s := range []string{"/a", "/../x", "/%2e%2e/x", "//x", "/a/./b/../../..", "/%252e%252e",
		"/" + strings.Repeat("n", 5000), strings.Repeat("/d", 2000), "/" + strings.Repeat("é", 200)} {
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
		if err := (PathLimits{}).Check(got); err != nil {
			var ple *PathLimitError
			if !errors.As(err, &ple) || (ple.StatusCode() != 400 && ple.StatusCode() != 414) {
				t.Fatalf("Check(%q) = %v, want a *PathLimitError answered 400 or 414", got, err)
			}
			return
		}
		segs := strings.Split(got, "/")
		if len(got) > DefaultMaxPathBytes || len(segs) > DefaultMaxDepth {
			t.Fatalf("Check(%q) accepted %d bytes, %d levels", got, len(got), len(segs))
		}
		for _, s := range segs {
			if len(s) > MaxNameBytes {
				t.Fatalf("Check(%q) accepted a %d-byte name", got, len(s))
			}
		}
	})
}

func TestPathLimitsCheck(t *testing.T) {
	for _, tc := range []struct {
		lim  PathLimits
		in   string
		want string // "" for accepted
	}{
		{PathLimits{}, "a/b/c", ""},
		{PathLimits{}, strings.Repeat("d/", 63) + "f", ""},
		{PathLimits{}, strings.Repeat("d/", 64) + "f", "path too deep: 65 levels, over the limit of 64 (max-depth); use a shallower path"},
		{PathLimits{}, strings.Repeat("n", 4097), "path too long: 4097 bytes, over the limit of 4096 (max-path-bytes); use a shorter path"},
		{PathLimits{}, "a/" + strings.Repeat("é", 128), `path segment "éééééééé"... too long: 256 bytes, over the limit of 255 per name; use a shorter name`},
		{PathLimits{MaxDepth: 2, MaxBytes: 5}, "a/b", ""},
		{PathLimits{MaxDepth: 2, MaxBytes: 5}, "a/b/c", "path too deep: 3 levels, over the limit of 2 (max-depth); use a shallower path"},
		{PathLimits{MaxDepth: 2, MaxBytes: 5}, "abcdef", "path too long: 6 bytes, over the limit of 5 (max-path-bytes); use a shorter path"},
	} {
		got := ""
		if err := tc.lim.Check(tc.in); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%+v.Check(%.30q) = %q, want %q", tc.lim, tc.in, got, tc.want)
		}
	}
}
