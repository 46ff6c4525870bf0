package offlinesync

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: Sync
// must end every run's and every upload's goroutine before it returns.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
