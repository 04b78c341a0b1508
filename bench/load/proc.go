package load

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat.
// Linux fixes it at 100 for every architecture junction runs on.
const clockTicks = 100

// procStat is what the load generator reads of one process.
type procStat struct {
	ppid  int
	ticks int64 // utime + stime
}

// readStat parses /proc/<pid>/stat. The command name (field 2) may hold
// spaces and parentheses, so the fields are counted from the last ')'.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	return parseStat(b)
}

func parseStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("stat: no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	// After the name: state(0) ppid(1) ... utime(11) stime(12).
	if len(f) < 13 {
		return procStat{}, fmt.Errorf("stat: %d fields after the name, want at least 13", len(f))
	}
	ppid, err1 := strconv.Atoi(f[1])
	ut, err2 := strconv.ParseInt(f[11], 10, 64)
	st, err3 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return procStat{}, fmt.Errorf("stat: bad number")
	}
	return procStat{ppid: ppid, ticks: ut + st}, nil
}

// tree returns root and every descendant of it alive now.
func tree(root int) []int {
	children := make(map[int][]int)
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil {
			continue
		}
		children[st.ppid] = append(children[st.ppid], pid)
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// TreeUsage is the CPU time and resident memory of a process tree, and
// of its root alone (a hub without the upstreams it spawned).
type TreeUsage struct {
	Ticks    int64 // CPU, in clock ticks (1/100 s)
	RSSBytes int64 // sum of VmRSS
	Procs    int

	RootTicks    int64
	RootRSSBytes int64
}

// CPUSeconds returns Ticks in seconds.
func (u TreeUsage) CPUSeconds() float64 { return float64(u.Ticks) / clockTicks }

// Usage returns the usage of root's process tree. A process that exits
// while it is being read is left out.
func Usage(root int) TreeUsage {
	var u TreeUsage
	for _, pid := range tree(root) {
		st, err := readStat(pid)
		if err != nil {
			continue
		}
		r := rss(pid)
		u.Ticks += st.ticks
		u.RSSBytes += r
		u.Procs++
		if pid == root {
			u.RootTicks, u.RootRSSBytes = st.ticks, r
		}
	}
	return u
}

// rss returns VmRSS of pid in bytes, or 0.
func rss(pid int) int64 { return statusBytes(pid, "VmRSS:") }

// anonRSS returns RssAnon of pid in bytes (its resident memory that no
// file backs: heap, stacks), or 0.
func anonRSS(pid int) int64 { return statusBytes(pid, "RssAnon:") }

func statusBytes(pid int, key string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	return parseStatus(b, key)
}

// parseStatus returns the field key (such as "VmRSS:") of a
// /proc/PID/status in bytes, or 0.
func parseStatus(status []byte, key string) int64 {
	for line := range bytes.Lines(status) {
		if rest, ok := bytes.CutPrefix(line, []byte(key)); ok {
			f := strings.Fields(string(rest))
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}
