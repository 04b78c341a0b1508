package memtrim

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// resident returns the bytes of the test binary's droppable mappings that
// are resident now.
func resident(t *testing.T) int64 {
	t.Helper()
	maps, err := executableMappings()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, m := range maps {
		if m.droppable() {
			n += m.rss
		}
	}
	return n
}

func TestReleaseShrinksResidentCode(t *testing.T) {
	before := resident(t)
	n, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	after := resident(t)
	t.Logf("resident code and read-only data: %d KiB before, %d KiB released, %d KiB after", before>>10, n>>10, after>>10)
	if n <= 0 || n < before/2 {
		t.Errorf("released %d bytes of %d resident", n, before)
	}
	// What is mapped again is what ran since (the release, reading
	// smaps, the runtime and, under -race, the race detector), not the
	// test binary's startup.
	if after >= before {
		t.Errorf("resident after release %d bytes, before %d", after, before)
	}
}

func TestExecutableMappingsFindTheBinary(t *testing.T) {
	maps, err := executableMappings()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var code bool
	for _, m := range maps {
		code = code || strings.Contains(m.perms, "x")
	}
	if len(maps) < 2 || !code {
		t.Fatalf("mappings of %s: %+v; want its code and data", exe, maps)
	}
}

// TestReleaseInBuiltPrograms builds a program that releases its pages and
// then runs code and reads tables it has not touched since, as a plain
// executable and as a position-independent one, whose relocated tables
// are private copies that must survive the release.
func TestReleaseInBuiltPrograms(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("the go command is needed to build the test program: ", err)
	}
	for _, mode := range []string{"exe", "pie"} {
		t.Run(mode, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "prog")
			build := exec.Command(goBin, "build", "-buildmode="+mode, "-o", bin, "./testdata/prog")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build -buildmode=%s: %v\n%s", mode, err, out)
			}
			out, err := exec.Command(bin).CombinedOutput()
			if err != nil {
				t.Fatalf("prog (-buildmode=%s): %v\n%s", mode, err, out)
			}
			want := `released=true [{"X":1,"Y":2,"name":"a"},{"X":2,"Y":3,"name":"b"},{"X":3,"Y":1,"name":"c"}] main.point` + "\n"
			if string(out) != want {
				t.Errorf("prog (-buildmode=%s) printed %q, want %q", mode, out, want)
			}
		})
	}
}

const sample = `00400000-00c60000 r-xp 00000000 fd:01 393223                             /usr/local/bin/junction
Size:               8576 kB
Rss:                6020 kB
Pss:                3010 kB
Anonymous:             0 kB
Locked:                0 kB
VmFlags: rd ex mr mw me dw sd
00c60000-01380000 r--p 00860000 fd:01 393223                             /usr/local/bin/junction
Rss:                3212 kB
Anonymous:             4 kB
Locked:                0 kB
01380000-013c0000 rw-p 00f80000 fd:01 393223                             /usr/local/bin/junction
Rss:                 120 kB
Anonymous:            60 kB
40000000-44000000 rw-p 00000000 00:00 0 
Rss:                1024 kB
Anonymous:          1024 kB
7f000000-7f100000 r--p 00000000 fd:01 12                         /usr/lib/locale/C.utf8/LC_CTYPE
Rss:                  16 kB
Anonymous:             0 kB
Locked:                0 kB
`

func TestParseSmaps(t *testing.T) {
	all, err := parseSmaps(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	want := []mapping{
		{start: 0x400000, end: 0xc60000, perms: "r-xp", dev: "fd:01", inode: "393223", rss: 6020 << 10},
		{start: 0xc60000, end: 0x1380000, perms: "r--p", dev: "fd:01", inode: "393223", rss: 3212 << 10, anonymous: 4 << 10},
		{start: 0x1380000, end: 0x13c0000, perms: "rw-p", dev: "fd:01", inode: "393223", rss: 120 << 10, anonymous: 60 << 10},
		{start: 0x40000000, end: 0x44000000, perms: "rw-p", dev: "00:00", inode: "0", rss: 1 << 20, anonymous: 1 << 20},
		{start: 0x7f000000, end: 0x7f100000, perms: "r--p", dev: "fd:01", inode: "12", rss: 16 << 10},
	}
	if !reflect.DeepEqual(all, want) {
		t.Fatalf("parsed\n%+v\nwant\n%+v", all, want)
	}
	// The file holding 0x500000: the binary's three mappings, of which
	// only the code holds nothing but the file's pages (the read-only
	// data has a private copy, as relocations make in a PIE binary).
	exe := fileOf(all, 0x500000)
	if len(exe) != 3 {
		t.Fatalf("fileOf: %+v", exe)
	}
	var drop []string
	for _, m := range exe {
		if m.droppable() {
			drop = append(drop, m.perms)
		}
	}
	if !reflect.DeepEqual(drop, []string{"r-xp"}) {
		t.Errorf("droppable: %v, want only the code", drop)
	}
	if got := fileOf(all, 0x40001000); got != nil {
		t.Errorf("fileOf an anonymous mapping: %+v, want none", got)
	}
	if got := fileOf(all, 0x10); got != nil {
		t.Errorf("fileOf an unmapped address: %+v, want none", got)
	}
}

func TestDroppable(t *testing.T) {
	base := mapping{start: 0x1000, end: 0x2000, perms: "r-xp", dev: "fd:01", inode: "7", rss: 4096}
	if !base.droppable() {
		t.Fatal("plain code mapping not droppable")
	}
	for name, change := range map[string]func(*mapping){
		"writable":      func(m *mapping) { m.perms = "rw-p" },
		"shared":        func(m *mapping) { m.perms = "r-xs" },
		"anonymous":     func(m *mapping) { m.inode = "0" },
		"private copy":  func(m *mapping) { m.anonymous = 4096 },
		"locked":        func(m *mapping) { m.locked = 4096 },
		"not resident":  func(m *mapping) { m.rss = 0 },
		"garbled perms": func(m *mapping) { m.perms = "r" },
	} {
		m := base
		change(&m)
		if m.droppable() {
			t.Errorf("%s mapping %+v is droppable", name, m)
		}
	}
}

func TestParseSmapsErrors(t *testing.T) {
	for _, in := range []string{
		"Rss: 4 kB\n",
		"00400000 r-xp 00000000 fd:01 1 /x\n",
		"00500000-00400000 r-xp 00000000 fd:01 1 /x\n",
		"00400000-00500000 r-xp\n",
		"00400000-00500000 r-xp 00000000 fd:01 1 /x\nRss: many kB\n",
		"00400000-00500000 r-xp 00000000 fd:01 1 /x\nAnonymous: 4\n",
		"00400000-00500000 r-xp 00000000 fd:01 1 /x\nLocked: -4 kB\n",
	} {
		if _, err := parseSmaps(strings.NewReader(in)); err == nil {
			t.Errorf("parseSmaps(%q): no error", in)
		}
	}
}

func FuzzParseSmaps(f *testing.F) {
	f.Add(sample)
	f.Add("00400000-00500000 r-xp 00000000 fd:01 1 /x\nRss: 4 kB\n")
	f.Fuzz(func(t *testing.T, in string) {
		all, err := parseSmaps(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, m := range all {
			if m.end < m.start || m.rss < 0 || m.anonymous < 0 || m.locked < 0 {
				t.Fatalf("parsed %+v from %q", m, in)
			}
		}
	})
}
