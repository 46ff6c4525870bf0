// Package procstat reads a process's CPU time and peak resident size from
// /proc, for the benchmarks that measure the collector from outside.
package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is USER_HZ, the unit of /proc/<pid>/stat's CPU times: 100 on
// every Linux the collector ships for (it is fixed by the kernel ABI, not
// by CONFIG_HZ), so there is no need for cgo's sysconf.
const clockTick = 10 * time.Millisecond

// CPUTime is the CPU a process has used so far, user and system.
func CPUTime(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, may hold spaces and parentheses: count
	// fields after its closing one. utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// PeakRSS is a process's VmHWM, its largest resident size so far, in bytes.
func PeakRSS(pid int) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/status VmHWM: %w", pid, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmHWM", pid)
}

// CPUTimes is the CPU time of every process of pids, together.
func CPUTimes(pids []int) (time.Duration, error) {
	var sum time.Duration
	for _, pid := range pids {
		t, err := CPUTime(pid)
		if err != nil {
			return 0, err
		}
		sum += t
	}
	return sum, nil
}

// PeakRSSes is the peak resident size of every process of pids, added: a
// tier's memory is its processes'.
func PeakRSSes(pids []int) (int64, error) {
	var sum int64
	for _, pid := range pids {
		b, err := PeakRSS(pid)
		if err != nil {
			return 0, err
		}
		sum += b
	}
	return sum, nil
}
