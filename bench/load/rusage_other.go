//go:build !unix

package load

import "time"

// SelfCPU is not measured where there is no getrusage: the driver's CPU
// figures read 0, as the server's do without /proc.
func SelfCPU() time.Duration { return 0 }
