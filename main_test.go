package primeexporter

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test must leave no goroutine behind: close-out timers, the idle
// janitor and HTTP connections included.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
