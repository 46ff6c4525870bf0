//go:build outage

package e2e

import (
	"testing"
	"time"
)

// The Done-when, behind the build tag outage (scripts/outage.sh;
// about 11 minutes): a ten-minute outage with two kill -9s. Each of the
// first two collectors faces two minutes of it, so each warns once; the
// last faces six, more than exporterhelper's limit.
func TestATenMinutePlatformOutageWithTwoKillsLosesNothingOnTheDefaultRetry(t *testing.T) {
	runLongOutage(t, longOutage{outage: 10 * time.Minute, kills: []time.Duration{2 * time.Minute, 4 * time.Minute}, steps: 40})
}
