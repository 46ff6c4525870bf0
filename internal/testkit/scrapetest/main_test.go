package scrapetest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a server, or a test's HTTP client, leaves
// a goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
