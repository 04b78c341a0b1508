package memtrim

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"syscall"
)

// Release unmaps the executable's read-only file pages from this process
// (see the package doc). It returns how many bytes of them were resident
// before.
func Release() (int64, error) {
	maps, err := executableMappings()
	if err != nil {
		return 0, err
	}
	var released int64
	for _, m := range maps {
		if !m.droppable() {
			continue
		}
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, m.start, m.end-m.start, syscall.MADV_DONTNEED); errno != 0 {
			return released, fmt.Errorf("memtrim: madvise %#x-%#x: %w", m.start, m.end, errno)
		}
		released += m.rss
	}
	return released, nil
}

// executableMappings reads /proc/self/smaps and returns the mappings of
// the file this code runs from.
func executableMappings() ([]mapping, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, fmt.Errorf("memtrim: %w", err)
	}
	defer f.Close()
	all, err := parseSmaps(f)
	if err != nil {
		return nil, fmt.Errorf("memtrim: /proc/self/smaps: %w", err)
	}
	return fileOf(all, uintptr(reflect.ValueOf(Release).Pointer())), nil
}

// A mapping is one entry of /proc/PID/smaps.
type mapping struct {
	start, end uintptr
	perms      string // "r-xp"
	dev, inode string // the file mapped; inode "0" for none
	rss        int64  // bytes resident
	anonymous  int64  // bytes of private copies (written or copied-on-write pages)
	locked     int64  // bytes locked in memory
}

// droppable reports whether m holds only pages that the file itself can
// give back: private, not writable, no private copies, nothing locked.
func (m mapping) droppable() bool {
	return len(m.perms) == 4 && m.perms[1] == '-' && m.perms[3] == 'p' &&
		m.inode != "0" && m.anonymous == 0 && m.locked == 0 && m.rss > 0
}

// fileOf returns the mappings of the file that holds address pc (the
// executable, for an address of its code), wherever that file was mapped.
func fileOf(all []mapping, pc uintptr) []mapping {
	var dev, inode string
	for _, m := range all {
		if m.start <= pc && pc < m.end {
			dev, inode = m.dev, m.inode
		}
	}
	if inode == "" || inode == "0" {
		return nil
	}
	var out []mapping
	for _, m := range all {
		if m.dev == dev && m.inode == inode {
			out = append(out, m)
		}
	}
	return out
}

// parseSmaps parses the format of /proc/PID/smaps: for each mapping, a
// header line ("start-end perms offset dev inode [path]") and then lines
// "Key: value [kB]".
func parseSmaps(r io.Reader) ([]mapping, error) {
	var out []mapping
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if key, ok := strings.CutSuffix(fields[0], ":"); ok {
			if len(out) == 0 {
				return nil, fmt.Errorf("line %d: %q before any mapping", line, key)
			}
			m := &out[len(out)-1]
			switch key {
			case "Rss", "Anonymous", "Locked":
				if len(fields) != 3 || fields[2] != "kB" {
					return nil, fmt.Errorf("line %d: %s: want a size in kB", line, key)
				}
				kb, err := strconv.ParseInt(fields[1], 10, 64)
				if err != nil || kb < 0 {
					return nil, fmt.Errorf("line %d: %s: bad size %q", line, key, fields[1])
				}
				switch key {
				case "Rss":
					m.rss = kb << 10
				case "Anonymous":
					m.anonymous = kb << 10
				case "Locked":
					m.locked = kb << 10
				}
			}
			continue
		}
		m, err := parseHeader(fields)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// parseHeader parses the fields of a mapping's first line.
func parseHeader(fields []string) (mapping, error) {
	if len(fields) < 5 {
		return mapping{}, fmt.Errorf("mapping %q: want address range, perms, offset, device and inode", strings.Join(fields, " "))
	}
	lo, hi, ok := strings.Cut(fields[0], "-")
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	if !ok || err1 != nil || err2 != nil || end < start {
		return mapping{}, fmt.Errorf("mapping %q: bad address range", fields[0])
	}
	return mapping{start: uintptr(start), end: uintptr(end), perms: fields[1], dev: fields[3], inode: fields[4]}, nil
}
