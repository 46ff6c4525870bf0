package rfttest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: Close
// must wait for every handler, including those held by a Delay.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
