//go:build unix

package load

import (
	"syscall"
	"time"
)

// SelfCPU is the CPU time the calling process (the load generator, or a
// benchmark) has used so far.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
