package offlinesync

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Progress hears of a sync's advance. Calls may come from several
// goroutines.
type Progress interface {
	// Start is told the number of runs and the bytes there are to send.
	Start(runs int, bytes int64)
	// Run is told the sync of run i (from 1) began.
	Run(i int, dir string)
	// Sent is told bytes went out: a metrics line or an object (name).
	Sent(dir, name string, bytes int64)
	Finish()
}

// Bar draws one progress bar on a terminal: runs, objects, bytes and rate.
type Bar struct {
	mu      sync.Mutex
	w       io.Writer
	bar     *progressbar.ProgressBar
	runs    int
	run     int
	objects int
}

// NewBar draws on w, which should be a terminal.
func NewBar(w io.Writer) *Bar { return &Bar{w: w} }

func (b *Bar) Start(runs int, bytes int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runs = runs
	b.bar = progressbar.NewOptions64(max(bytes, 1),
		progressbar.OptionSetWriter(b.w),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(b.w) }),
		progressbar.OptionSetDescription(b.describe()),
	)
}

func (b *Bar) describe() string {
	return fmt.Sprintf("run %d/%d · objects %d", b.run, b.runs, b.objects)
}

func (b *Bar) Run(i int, _ string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.run = i
	b.bar.Describe(b.describe())
}

func (b *Bar) Sent(_, name string, bytes int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if name != "" {
		b.objects++
		b.bar.Describe(b.describe())
	}
	_ = b.bar.Add64(bytes)
}

func (b *Bar) Finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	_ = b.bar.Finish()
}

// Lines prints plain lines, for a pipe or a log: one per run and per
// object, and the metrics of a run in one line at its end.
type Lines struct {
	mu      sync.Mutex
	w       io.Writer
	metrics map[string][2]int64 // dir → lines, bytes not yet printed
}

// NewLines prints to w.
func NewLines(w io.Writer) *Lines { return &Lines{w: w, metrics: map[string][2]int64{}} }

func (l *Lines) Start(runs int, bytes int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "prime-sync: %d run(s), %s to send\n", runs, humanBytes(bytes))
}

func (l *Lines) Run(i int, dir string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
	fmt.Fprintf(l.w, "prime-sync: run %d: %s\n", i, dir)
}

func (l *Lines) Sent(dir, name string, bytes int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if name == "" {
		m := l.metrics[dir]
		l.metrics[dir] = [2]int64{m[0] + 1, m[1] + bytes}
		return
	}
	l.flushLocked() // a run's metrics go before its objects
	fmt.Fprintf(l.w, "prime-sync: %s: object %s confirmed (%s)\n", dir, name, humanBytes(bytes))
}

func (l *Lines) Finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
}

func (l *Lines) flushLocked() {
	for dir, m := range l.metrics {
		fmt.Fprintf(l.w, "prime-sync: %s: %d metrics line(s) posted (%s)\n", dir, m[0], humanBytes(m[1]))
	}
	clear(l.metrics)
}

// quiet hears nothing.
type quiet struct{}

func (quiet) Start(int, int64)           {}
func (quiet) Run(int, string)            {}
func (quiet) Sent(string, string, int64) {}
func (quiet) Finish()                    {}
