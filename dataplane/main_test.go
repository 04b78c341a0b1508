package dataplane

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the package's tests leave no goroutine behind:
// connections, calls, and the session front's sweeps end with them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
