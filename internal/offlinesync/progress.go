package offlinesync

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Progress hears of a sync's advance over all its runs. Calls come from
// several goroutines: runs sync at once (Options.ParallelRuns).
type Progress interface {
	// Start is told the number of runs and the bytes there are to send.
	Start(runs int, bytes int64)
	// Run is told the sync of run i (from 1, in the order given) began.
	Run(i int, dir string)
	// Sent is told bytes went out: a metrics line or an object (name).
	Sent(dir, name string, bytes int64)
	// Ended is told a run's sync ended (or was never begun, when a refused
	// key or a cancel stopped the sync first); err says what is left.
	Ended(dir string, err error)
	Finish()
}

// Bar draws one progress bar over all runs on a terminal: runs ended and
// in flight, objects, bytes and rate.
type Bar struct {
	mu      sync.Mutex
	w       io.Writer
	bar     *progressbar.ProgressBar
	runs    int
	syncing int
	ended   int
	left    int
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

// describe is, e.g., "runs 3/16 · 4 syncing · objects 120 · 1 left".
func (b *Bar) describe() string {
	s := fmt.Sprintf("runs %d/%d", b.ended, b.runs)
	if b.syncing > 0 {
		s += fmt.Sprintf(" · %d syncing", b.syncing)
	}
	s += fmt.Sprintf(" · objects %d", b.objects)
	if b.left > 0 {
		s += fmt.Sprintf(" · %d left", b.left)
	}
	return s
}

func (b *Bar) Run(int, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.syncing++
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

func (b *Bar) Ended(_ string, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ended++
	b.syncing = max(b.syncing-1, 0)
	if err != nil {
		b.left++
	}
	b.bar.Describe(b.describe())
}

func (b *Bar) Finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	_ = b.bar.Finish()
}

// Lines prints plain lines, for a pipe or a log: one when a run begins,
// one per object, a run's metrics in one line, and one when it ends, with
// the count of runs ended. Every line after the run's start names its
// directory, so that runs synced at once stay apart.
type Lines struct {
	mu      sync.Mutex
	w       io.Writer
	runs    int
	ended   int
	metrics map[string][2]int64 // dir → lines, bytes not yet printed
}

// NewLines prints to w.
func NewLines(w io.Writer) *Lines { return &Lines{w: w, metrics: map[string][2]int64{}} }

func (l *Lines) Start(runs int, bytes int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = runs
	fmt.Fprintf(l.w, "prime-sync: %d run(s), %s to send\n", runs, humanBytes(bytes))
}

func (l *Lines) Run(i int, dir string) {
	l.mu.Lock()
	defer l.mu.Unlock()
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
	l.flushLocked(dir) // a run's metrics go before its objects
	fmt.Fprintf(l.w, "prime-sync: %s: object %s confirmed (%s)\n", dir, name, humanBytes(bytes))
}

func (l *Lines) Ended(dir string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked(dir)
	l.ended++
	if err != nil {
		fmt.Fprintf(l.w, "prime-sync: %s: not finished (%d/%d runs ended): %v\n", dir, l.ended, l.runs, err)
		return
	}
	fmt.Fprintf(l.w, "prime-sync: %s: synced (%d/%d runs ended)\n", dir, l.ended, l.runs)
}

func (l *Lines) Finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for dir := range l.metrics {
		l.flushLocked(dir)
	}
}

func (l *Lines) flushLocked(dir string) {
	if m, ok := l.metrics[dir]; ok {
		fmt.Fprintf(l.w, "prime-sync: %s: %d metrics line(s) posted (%s)\n", dir, m[0], humanBytes(m[1]))
		delete(l.metrics, dir)
	}
}

// quiet hears nothing.
type quiet struct{}

func (quiet) Start(int, int64)           {}
func (quiet) Run(int, string)            {}
func (quiet) Sent(string, string, int64) {}
func (quiet) Ended(string, error)        {}
func (quiet) Finish()                    {}
