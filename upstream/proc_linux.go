package upstream

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// setParentDeathSignal asks Linux to kill the group leader if junction
// itself dies without stopping it.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// groupAlive reports whether a live (not zombie) process other than
// except is in the group pgid. Orphaned members become zombies of PID 1,
// which in a container may never reap them, so kill(-pgid, 0) alone would
// wait for ever.
func groupAlive(pgid, except int) bool {
	if !signalGroup(pgid, 0) {
		return false
	}
	pids, err := groupMembers(pgid)
	if err != nil {
		return true
	}
	for _, pid := range pids {
		if pid != except {
			return true
		}
	}
	return false
}

// groupMembers returns the live (not zombie) processes of the group pgid,
// from /proc.
func groupMembers(pgid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if state, pgrp, ok := parseStat(b); ok && pgrp == pgid && state != 'Z' && state != 'X' {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// parseStat returns the state and process group of a /proc/<pid>/stat
// line: "pid (comm) state ppid pgrp ...". comm may hold spaces and
// parentheses, so fields are counted from the last ')'.
func parseStat(b []byte) (state byte, pgrp int, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	pgrp, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], pgrp, true
}
