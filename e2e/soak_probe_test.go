package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// probe reads a running collector's resident memory from /proc and its
// goroutine count from the pprof extension: the two figures that show a
// leak from outside the process, without instrumenting the binary. The
// soak and the scale measurement use it whole; the memory-limit test
// (memlimit_test.go, in CI, so this file carries no build tag) reads
// /proc through readMemory.
type probe struct {
	pid   int
	pprof string // host:port of the pprof extension
	// client opens a fresh connection per request: a kept-alive one would
	// itself hold a goroutine in the collector and skew the count.
	client *http.Client
	began  time.Time
	// landed, when set, counts what has landed so far (the soak: the rows
	// the fake platform confirmed), so a reading's CPU can be put per row.
	landed func() int64

	mu      sync.Mutex
	samples []sample
}

// sample is one reading of the collector.
type sample struct {
	at         time.Duration // since the probe began
	phase      string
	mem        memory
	goroutines int
	cpu        time.Duration // user + system time the collector used so far
	rows       int64         // what had landed when the reading was taken (probe.landed)
}

func newProbe(pid int, pprofAddr string) *probe {
	return &probe{
		pid:    pid,
		pprof:  pprofAddr,
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
		began:  time.Now(),
	}
}

// take reads the collector now and records the reading under phase.
func (p *probe) take(phase string) (sample, error) {
	mem, err := readMemory(p.pid)
	if err != nil {
		return sample{}, err
	}
	cpu, err := readCPU(p.pid)
	if err != nil {
		return sample{}, err
	}
	g, err := p.goroutines()
	if err != nil {
		return sample{}, err
	}
	s := sample{at: time.Since(p.began), phase: phase, mem: mem, goroutines: g, cpu: cpu}
	if p.landed != nil {
		s.rows = p.landed()
	}
	p.mu.Lock()
	p.samples = append(p.samples, s)
	p.mu.Unlock()
	return s, nil
}

// every samples in the background until stop is closed; a failed reading
// is reported and the sampling goes on.
func (p *probe) every(t *testing.T, d time.Duration, phase func() string, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := p.take(phase()); err != nil {
					t.Errorf("sampling the collector: %v", err)
				}
			}
		}
	})
	return &wg
}

func (p *probe) all() []sample {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]sample(nil), p.samples...)
}

// goroutines is the first line of the goroutine profile:
// "goroutine profile: total N".
func (p *probe) goroutines() (int, error) {
	resp, err := p.client.Get("http://" + p.pprof + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("pprof answered %s", resp.Status)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil && err != io.EOF {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	n, ok := strings.CutPrefix(strings.TrimSpace(line), "goroutine profile: total ")
	if !ok {
		return 0, fmt.Errorf("unexpected goroutine profile header %q", line)
	}
	return strconv.Atoi(n)
}

// liveHeap runs garbage collections in the collector and reads what its
// heap still holds (HeapAlloc of the heap profile's runtime.MemStats): the
// memory a long-lived collector keeps, as opposed to what the Go runtime
// has not yet returned to the OS. Two collections, since what sync.Pools
// held survives the first (in their victim caches).
func (p *probe) liveHeap() (int64, error) {
	if _, err := p.memStats(true); err != nil {
		return 0, err
	}
	m, err := p.memStats(true)
	return m["HeapAlloc"], err
}

// gcWork reads how many bytes the collector has allocated so far and how
// many garbage collections it ran on its own (not forced): the work its
// heap did, counted rather than timed, so the machine's pace does not
// move it.
func (p *probe) gcWork() (allocated, collections int64, err error) {
	m, err := p.memStats(false)
	return m["TotalAlloc"], m["NumGC"] - m["NumForcedGC"], err
}

// memStats reads the runtime.MemStats at the end of the collector's heap
// profile ("# HeapAlloc = 123" lines), after a garbage collection if gc.
func (p *probe) memStats(gc bool) (map[string]int64, error) {
	url := "http://" + p.pprof + "/debug/pprof/heap?debug=1"
	if gc {
		url += "&gc=1"
	}
	resp, err := p.client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	m := map[string]int64{}
	for line := range strings.Lines(string(raw)) {
		k, v, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "# "), " = ")
		if n, err := strconv.ParseInt(v, 10, 64); ok && err == nil {
			m[k] = n
		}
	}
	for _, k := range []string{"HeapAlloc", "TotalAlloc", "NumGC", "NumForcedGC"} {
		if _, ok := m[k]; !ok {
			return nil, fmt.Errorf("the heap profile has no %s", k)
		}
	}
	return m, nil
}

// heapProfile runs a garbage collection in the collector and writes its
// heap profile (the pprof format: go tool pprof -top -sample_index
// inuse_space) to w.
func (p *probe) heapProfile(w io.Writer) error {
	resp, err := p.client.Get("http://" + p.pprof + "/debug/pprof/heap?gc=1")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("pprof answered %s", resp.Status)
	}
	_, err = io.Copy(w, resp.Body)
	return err
}

// memory is the resident-size part of /proc/<pid>/status, in kB.
type memory struct {
	rss  int64 // VmRSS: resident now
	hwm  int64 // VmHWM: the peak resident size so far
	anon int64 // RssAnon: the Go heap and stacks, among others
	file int64 // RssFile: mapped files, file_storage's bbolt database among them
}

// readMemory reads VmRSS, VmHWM, RssAnon and RssFile from
// /proc/<pid>/status.
func readMemory(pid int) (memory, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	var m memory
	fields := map[string]*int64{"VmRSS": &m.rss, "VmHWM": &m.hwm, "RssAnon": &m.anon, "RssFile": &m.file}
	for line := range strings.Lines(string(raw)) {
		key, rest, ok := strings.Cut(line, ":")
		dst, wanted := fields[key]
		if !ok || !wanted {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("%s: %w", key, err)
		}
		*dst = v
	}
	if m.rss == 0 || m.hwm == 0 {
		return memory{}, fmt.Errorf("/proc/%d/status has no VmRSS/VmHWM", pid)
	}
	return m, nil
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// readCPU reads utime + stime from /proc/<pid>/stat. The fields are
// counted after the command name's closing parenthesis, since the name may
// hold spaces.
func readCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := strings.LastIndexByte(string(raw), ')')
	f := strings.Fields(string(raw[i+1:]))
	// After the name: state is field 3, utime 14, stime 15.
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

func mb(kb int64) string { return fmt.Sprintf("%.1f MB", float64(kb)/1024) }
