package wire

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the package's tests leave no goroutine behind:
// server connections and their readers end with them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
