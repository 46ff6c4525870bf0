package procstat

import (
	"os"
	"testing"
	"time"
)

func TestThisProcessHasUsedCPUAndHasAPeakRSS(t *testing.T) {
	end := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(end) { // burn enough CPU for a few ticks
	}
	cpu, err := CPUTime(os.Getpid())
	if err != nil || cpu <= 0 {
		t.Errorf("cpuTime = %s, %v", cpu, err)
	}
	hwm, err := PeakRSS(os.Getpid())
	if err != nil || hwm < 1<<20 {
		t.Errorf("peakRSS = %d, %v", hwm, err)
	}
}
