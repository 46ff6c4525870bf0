package report

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/primeintellect/primeexporter/internal/sampletable"
)

// Axes of a chart: a step's rows are over steps, time-keyed rows over
// wall time (unix seconds).
const (
	AxisStep = "step"
	AxisTime = "time"
)

// The keys a metrics post reserves for its row (telemetry.md §2).
const (
	keyStep      = "step"
	keyTimestamp = "_timestamp"
)

// maxDroppedMarks bounds the places a chart marks; the count is exact.
const maxDroppedMarks = 1000

// maxBadLinesNamed bounds the line numbers a page names of a damaged
// metrics.jsonl; BadLines counts them all.
const maxBadLinesNamed = 10

// Series is one metric's curve, as the run holds it.
type Series struct {
	Name string
	Axis string
	X, Y []float64 // sorted by X; one point an X
	// Dropped are the Xs of values that were not finite numbers (null,
	// NaN, ±Infinity, text); DroppedCount counts them all.
	Dropped      []float64
	DroppedCount int
}

// metricsFile is what metrics.jsonl gives a page: its series and the lines
// it could not read.
type metricsFile struct {
	Series   []*Series
	BadLines int
	// BadLineNos are the first maxBadLinesNamed of them, 1-based, so that a
	// page can say which lines to look at.
	BadLineNos []int
	// Start is the least _timestamp of any row, step rows too: the run's
	// first row, where the System section's time starts. 0 when none has one.
	Start float64
}

type point struct{ x, y float64 }

// seriesBuilder collects one series' points before merging.
type seriesBuilder struct {
	points  []point
	dropped []float64
	ndrop   int
}

// readMetricsFile reads path; a run without metrics.jsonl has no curves.
func readMetricsFile(path string) (metricsFile, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return metricsFile{}, nil
	}
	if err != nil {
		return metricsFile{}, err
	}
	defer f.Close()
	return readMetrics(f)
}

// readMetrics reads metrics posts, one a line. A line that is not a post
// (cut short by a crash, or not JSON even with Python's NaN read as null)
// is counted and passed over: the rest of the run is still worth seeing.
func readMetrics(r io.Reader) (metricsFile, error) {
	builders := map[string]*seriesBuilder{}
	var out metricsFile
	br := bufio.NewReaderSize(r, 1<<20)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 && !addPost(builders, line, &out.Start) {
			out.BadLines++
			if len(out.BadLineNos) < maxBadLinesNamed {
				out.BadLineNos = append(out.BadLineNos, n)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out, err
		}
	}
	for key, b := range builders {
		axis, name, _ := strings.Cut(key, "\x00")
		out.Series = append(out.Series, b.series(axis, name))
	}
	slices.SortFunc(out.Series, func(a, b *Series) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Axis, b.Axis))
	})
	return out, nil
}

type post struct {
	Metrics map[string]json.RawMessage `json:"metrics"`
}

// addPost adds one line's values and lowers *start to its _timestamp;
// false when the line is not a post.
func addPost(builders map[string]*seriesBuilder, line []byte, start *float64) bool {
	var p post
	if err := json.Unmarshal(line, &p); err != nil {
		fixed, changed := sampletable.RewriteJSON(string(line), false, true)
		if !changed || json.Unmarshal([]byte(fixed), &p) != nil {
			return false
		}
	}
	axis, x := AxisStep, 0.0
	if s, ok := finite(p.Metrics[keyStep]); ok {
		x = s
	} else if ts, ok := finite(p.Metrics[keyTimestamp]); ok {
		axis, x = AxisTime, ts
	} else {
		return false
	}
	if ts, ok := finite(p.Metrics[keyTimestamp]); ok && (*start == 0 || ts < *start) {
		*start = ts
	}
	for k, raw := range p.Metrics {
		if k == keyStep || k == keyTimestamp {
			continue
		}
		key := axis + "\x00" + k
		b := builders[key]
		if b == nil {
			b = &seriesBuilder{}
			builders[key] = b
		}
		if v, ok := finite(raw); ok {
			b.points = append(b.points, point{x, v})
			continue
		}
		b.ndrop++
		if len(b.dropped) < maxDroppedMarks {
			b.dropped = append(b.dropped, x)
		}
	}
	return true
}

// finite reads a JSON number that is finite.
func finite(raw json.RawMessage) (float64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	if c := raw[0]; c != '-' && (c < '0' || c > '9') {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	return v, err == nil && !math.IsNaN(v) && !math.IsInf(v, 0)
}

// series sorts the points by x; of two posts of one row, the later one's
// value wins, as the platform merges them.
func (b *seriesBuilder) series(axis, name string) *Series {
	slices.SortStableFunc(b.points, func(p, q point) int { return cmp.Compare(p.x, q.x) })
	s := &Series{Name: name, Axis: axis, X: make([]float64, 0, len(b.points)), Y: make([]float64, 0, len(b.points)),
		Dropped: b.dropped, DroppedCount: b.ndrop}
	for i, p := range b.points {
		if i+1 < len(b.points) && b.points[i+1].x == p.x {
			continue
		}
		s.X, s.Y = append(s.X, p.x), append(s.Y, p.y)
	}
	slices.Sort(s.Dropped)
	return s
}

// Group is the prefix a metric's name starts with: reward/mean is in
// "reward"; a name without a slash is in "".
func Group(name string) string {
	// A folded attribute ({env=a/b}) is not a prefix.
	head, _, _ := strings.Cut(name, "{")
	if i := strings.IndexByte(head, '/'); i > 0 {
		return head[:i]
	}
	return ""
}

func (s *Series) String() string {
	return fmt.Sprintf("%s over %s (%d points)", s.Name, s.Axis, len(s.X))
}
