//go:build !linux

package upstream

import (
	"os"
	"os/exec"
	"time"
)

// reaperSupported: outside Linux there is no reaper (see EnableReaper).
const reaperSupported = false

type reaper struct{}

func startReaper(int, time.Duration) (*reaper, error) { return nil, nil }
func (*reaper) pid() int                              { return 0 }
func (*reaper) release()                              {}
func clearParentDeathSignal(*exec.Cmd)                {}
func runReaper([]string)                              { os.Exit(2) }
