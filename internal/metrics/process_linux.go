package metrics

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// AddProcessMetrics registers the process metrics under client_golang's
// names (process_cpu_seconds_total, process_open_fds, process_max_fds,
// process_resident_memory_bytes, process_virtual_memory_bytes,
// process_virtual_memory_max_bytes, process_start_time_seconds,
// process_network_receive_bytes_total, process_network_transmit_bytes_total),
// read from getrusage, getrlimit and /proc/self when scraped. A value that
// cannot be read is left out of the scrape.
func (r *Registry) AddProcessMetrics() {
	r.CounterFunc("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", nil, func(emit func(float64, ...string)) {
		var ru syscall.Rusage
		if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
			emit(float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9)
		}
	})
	r.GaugeFunc("process_open_fds", "Number of open file descriptors.", nil, func(emit func(float64, ...string)) {
		if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
			emit(float64(len(ents)))
		}
	})
	r.GaugeFunc("process_max_fds", "Maximum number of open file descriptors.", nil, func(emit func(float64, ...string)) {
		var rl syscall.Rlimit
		if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil {
			emit(float64(rl.Cur))
		}
	})
	r.GaugeFunc("process_virtual_memory_max_bytes", "Maximum amount of virtual memory available in bytes.", nil, func(emit func(float64, ...string)) {
		var rl syscall.Rlimit
		if syscall.Getrlimit(syscall.RLIMIT_AS, &rl) == nil {
			if rl.Cur == ^uint64(0) { // RLIM_INFINITY
				emit(-1)
			} else {
				emit(float64(rl.Cur))
			}
		}
	})
	r.GaugeFunc("process_resident_memory_bytes", "Resident memory size in bytes.", nil, func(emit func(float64, ...string)) {
		if st, ok := readStatm(); ok {
			emit(float64(st.resident))
		}
	})
	r.GaugeFunc("process_virtual_memory_bytes", "Virtual memory size in bytes.", nil, func(emit func(float64, ...string)) {
		if st, ok := readStatm(); ok {
			emit(float64(st.size))
		}
	})
	for _, dir := range []struct{ name, help, field string }{
		{"process_network_receive_bytes_total", "Number of bytes received by the process over the network.", "InOctets"},
		{"process_network_transmit_bytes_total", "Number of bytes sent by the process over the network.", "OutOctets"},
	} {
		r.CounterFunc(dir.name, dir.help, nil, func(emit func(float64, ...string)) {
			if b, err := os.ReadFile("/proc/self/net/netstat"); err == nil {
				if v, ok := parseNetstat(b, "IpExt", dir.field); ok {
					emit(float64(v))
				}
			}
		})
	}
	r.GaugeFunc("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", nil, func(emit func(float64, ...string)) {
		if t, ok := startTime(); ok {
			emit(t)
		}
	})
}

type statm struct{ size, resident uint64 } // bytes

// readStatm reads /proc/self/statm: sizes in pages, the first two are the
// total program size and the resident set.
func readStatm() (statm, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return statm{}, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return statm{}, false
	}
	size, err1 := strconv.ParseUint(f[0], 10, 64)
	res, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return statm{}, false
	}
	page := uint64(os.Getpagesize())
	return statm{size * page, res * page}, true
}

// userHZ is the unit of /proc's clock-tick fields; Linux reports 100 on
// every architecture it supports today.
const userHZ = 100

// startTime returns the process start time in Unix seconds: the boot time
// (btime of /proc/stat) plus the process's start in clock ticks since
// boot (field 22 of /proc/self/stat).
func startTime() (float64, bool) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, false
	}
	ticks, ok := parseStartTicks(stat)
	if !ok {
		return 0, false
	}
	sys, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	boot, ok := parseBootTime(sys)
	if !ok {
		return 0, false
	}
	return float64(boot) + float64(ticks)/userHZ, true
}

// parseStartTicks returns field 22 (starttime) of a /proc/<pid>/stat line.
func parseStartTicks(stat []byte) (uint64, bool) {
	// The command name (field 2) is in parentheses and may contain
	// spaces and parentheses; fields are counted after the last ")".
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(stat[i+1:]))
	const startField = 22 - 3 // the fields after ")" start at field 3
	if len(f) <= startField {
		return 0, false
	}
	ticks, err := strconv.ParseUint(f[startField], 10, 64)
	return ticks, err == nil
}

// parseBootTime returns the btime line of /proc/stat: the boot time in
// Unix seconds.
func parseBootTime(stat []byte) (uint64, bool) {
	for line := range strings.Lines(string(stat)) {
		if rest, ok := strings.CutPrefix(line, "btime "); ok {
			boot, err := strconv.ParseUint(strings.TrimSpace(rest), 10, 64)
			return boot, err == nil
		}
	}
	return 0, false
}

// parseNetstat returns one field of /proc/<pid>/net/netstat, which comes in
// pairs of lines: "IpExt: Name1 Name2 ..." then "IpExt: 1 2 ...".
func parseNetstat(b []byte, section, field string) (uint64, bool) {
	var names []string
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != section+":" {
			continue
		}
		if names == nil {
			names = f[1:]
			continue
		}
		for i, n := range names {
			if n == field && i+1 < len(f) {
				v, err := strconv.ParseUint(f[i+1], 10, 64)
				return v, err == nil
			}
		}
		return 0, false
	}
	return 0, false
}
