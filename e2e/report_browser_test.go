package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's chromium (scripts/test.sh installs it), or
// PRIME_CHROMIUM; the report tests fail without it, never skip.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PRIME_CHROMIUM"); p != "" {
		return p
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed: apt-get install chromium (scripts/test.sh does it: ensure_chromium), or set PRIME_CHROMIUM")
	}
	return p
}

// page is a report page open in headless chromium, with everything the
// browser said about it.
type page struct {
	ctx context.Context

	mu       sync.Mutex
	problems []string // console errors, uncaught exceptions, error log entries
	requests []string // every URL the page asked for
}

// openPage starts a headless chromium for the test and loads url, waiting
// until the page's script says it is ready.
func openPage(t *testing.T, url string) (*page, time.Duration) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 1000))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	p := &page{}
	ctx, cancelCtx := chromedp.NewContext(allocCtx, chromedp.WithListener(p.listen))
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	p.ctx = ctx

	if _, err := chromedp.Call(ctx, log.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("chromium did not start: %v", err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	// A first page, so that the time below is the page's, not the
	// renderer's start.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("chromium did not open a page: %v", err)
	}
	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("loading %s: %v", url, err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body !== null && document.body.dataset.ready === "1"`,
		chromedp.WithPollingTimeout(60*time.Second))); err != nil {
		t.Fatalf("the page did not get ready: %v\nbrowser said: %v", err, p.said())
	}
	return p, time.Since(start)
}

// listen keeps what the browser says of the page: it runs on chromedp's
// reading goroutine, so it only records.
func (p *page) listen(ev any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				args = append(args, fmt.Sprint(a.Value, " ", a.Description))
			}
			p.problems = append(p.problems, "console."+string(ev.Type)+": "+strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + fmt.Sprint(d.Exception.Description)
		}
		p.problems = append(p.problems, "uncaught: "+msg)
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError {
			p.problems = append(p.problems, "log: "+ev.Entry.Text+" "+fmt.Sprint(ev.Entry.URL))
		}
	case *network.EventRequestWillBeSent:
		p.requests = append(p.requests, ev.Request.URL)
	}
}

func (p *page) said() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.problems...)
}

// checkQuiet fails the test on any console error and on any request that
// is not the page itself: the page works with no network.
func (p *page) checkQuiet(t *testing.T, url string) {
	t.Helper()
	// Let late errors (a chart drawn on scroll) arrive.
	time.Sleep(200 * time.Millisecond)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.problems) > 0 {
		t.Errorf("the page logged errors:\n%s", strings.Join(p.problems, "\n"))
	}
	for _, r := range p.requests {
		if r != url && !strings.HasPrefix(r, "data:") {
			t.Errorf("the page asked for %s: it must need nothing but itself", r)
		}
	}
}

// eval runs JavaScript in the page and decodes its value, passed as JSON.
func (p *page) eval(t *testing.T, js string, out any) {
	t.Helper()
	raw, err := chromedp.Run(p.ctx, chromedp.Evaluate[string]("JSON.stringify("+js+")"))
	if err != nil {
		t.Fatalf("evaluating %s: %v", js, err)
	}
	if err := json.Unmarshal([]byte(raw), out); err != nil {
		t.Fatalf("evaluating %s: %v (%s)", js, err, raw)
	}
}

// chartOnPage is what the page shows of one metric.
type chartOnPage struct {
	Name     string `json:"name"`
	Axis     string `json:"axis"`
	Points   int    `json:"points"`
	Plotted  int    `json:"plotted"`
	Dropped  int    `json:"dropped"`
	Canvases int    `json:"canvases"`
}

// metricSel finds each metric on the page in document order: a lone
// chart carries its metric's data attributes, and a System chart of
// several lines carries one data element a line.
const metricSel = `.chart[data-metric], .chart data[data-metric]`

func (p *page) charts(t *testing.T) []chartOnPage {
	t.Helper()
	var out []chartOnPage
	p.eval(t, `[...document.querySelectorAll('`+metricSel+`')].map(m => ({name: m.dataset.metric, axis: m.dataset.axis,
		points: +m.dataset.points, plotted: +m.dataset.plotted, dropped: +m.dataset.dropped,
		canvases: m.closest('.chart').querySelectorAll('canvas').length}))`, &out)
	return out
}

// drawChart scrolls the chart of the i-th metric (as charts lists them)
// into view, opening the fold it may be under, and waits until it is
// drawn: charts are drawn as they scroll into view.
func (p *page) drawChart(t *testing.T, i int) {
	t.Helper()
	card := `document.querySelectorAll('` + metricSel + `')[` + itoa(i) + `].closest('.chart')`
	var ok bool
	p.eval(t, `(() => { const c = `+card+`; const fold = c.closest('details'); if (fold) fold.open = true;
		c.scrollIntoView(); return true; })()`, &ok)
	if _, err := chromedp.Run(p.ctx, chromedp.Poll[bool](`(() => { const c = `+card+`;
		return c.dataset.rendered === "1" && (c.querySelector('canvas') !== null || c.querySelector('.empty') !== null); })()`,
		chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("chart %d was not drawn once in view: %v", i, err)
	}
}

// screenshot saves the whole page as PNG.
func (p *page) screenshot(t *testing.T, path string) {
	t.Helper()
	png, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}
