//go:build unix

// Package pgtest starts a real PostgreSQL server for a test: its own
// cluster, made with initdb in a temporary directory, listening only on
// a unix socket in that directory, and stopped when the test ends.
//
//	srv := pgtest.Start(t)
//	db, err := postgres.Open(ctx, srv.URL, nil)
//
// It looks for PostgreSQL 15 in /usr/lib/postgresql/15/bin (Debian's
// postgresql package, which scripts/setup installs), or in the
// directory named by JUNCTION_PG_BIN. Without it the test is skipped,
// unless JUNCTION_REQUIRE_TOOLS=1, when it fails.
//
// PostgreSQL refuses to run as root; a test run by root runs initdb and
// the server as the postgres user (which Debian's package creates).
package pgtest

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// DefaultBin is where Debian's postgresql-15 package puts the server.
const DefaultBin = "/usr/lib/postgresql/15/bin"

// A Server is a running PostgreSQL cluster.
type Server struct {
	// URL connects to the server's postgres database as its superuser,
	// over the unix socket: postgres://USER@/postgres?host=DIR.
	URL string
	// Dir holds the cluster (Dir/data), the socket and the server log
	// (Dir/log).
	Dir  string
	bin  string
	data string
	opts string // the server's options (-o of pg_ctl)
	cred *syscall.Credential
}

// Start makes a cluster in a new temporary directory, starts it, and
// stops it and removes the directory when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := os.Getenv("JUNCTION_PG_BIN")
	if bin == "" {
		bin = DefaultBin
	}
	if _, err := os.Stat(filepath.Join(bin, "initdb")); err != nil {
		if os.Getenv("JUNCTION_REQUIRE_TOOLS") == "1" {
			t.Fatalf("JUNCTION_REQUIRE_TOOLS=1 but PostgreSQL is missing: %v; run scripts/setup (it installs Debian's postgresql)", err)
		}
		t.Skipf("PostgreSQL is missing (%v); run scripts/setup to install it", err)
	}
	// A short path: a unix socket's path must fit in 107 bytes, and
	// t.TempDir's can be longer.
	dir, err := os.MkdirTemp("", "pgtest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &Server{Dir: dir, bin: bin}
	username := ""
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, PostgreSQL needs another user and there is no postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		username = u.Username
	} else {
		u, err := user.Current()
		if err != nil {
			t.Fatal(err)
		}
		username = u.Username
	}
	data := filepath.Join(dir, "data")
	s.data = data
	s.run(t, "initdb", "-D", data, "-U", username, "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C")
	t.Cleanup(func() {
		// immediate: the test is over, and a test's cluster needs no
		// clean shutdown.
		cmd := s.command("pg_ctl", "stop", "-D", data, "-m", "immediate", "-w")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("stopping PostgreSQL: %v\n%s", err, out)
		}
	})
	s.opts = fmt.Sprintf("-k %s -c listen_addresses='' -c fsync=off -c max_connections=200", dir)
	s.run(t, "pg_ctl", "start", "-w", "-t", "60", "-D", data, "-l", filepath.Join(dir, "log"), "-o", s.opts)
	s.URL = (&url.URL{Scheme: "postgres", User: url.User(username), Path: "/postgres", RawQuery: "host=" + url.QueryEscape(dir)}).String()
	return s
}

// Restart stops the server (fast: open connections are cut, as when a
// database fails over) and starts it again, for tests of what clients
// do when their connections break.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.run(t, "pg_ctl", "restart", "-w", "-t", "60", "-m", "fast", "-D", s.data, "-l", filepath.Join(s.Dir, "log"), "-o", s.opts)
}

// Log returns what the server has logged so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "log"))
	return string(b)
}

func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.Dir
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd
}

func (s *Server) run(t testing.TB, name string, args ...string) {
	t.Helper()
	cmd := s.command(name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s\n%s", name, err, out.String(), s.Log())
	}
}
