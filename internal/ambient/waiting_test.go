package ambient

import (
	"maps"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

func points(n int) pmetric.Metrics {
	md, ms := resource(hostScope, nil)
	for i := range n {
		point(ms, "process.threads", false, t0, float64(i))
	}
	return md
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestWaitingDataIsTakenOnceOldestFirst(t *testing.T) {
	c := &clock{time.Unix(0, 0)}
	w := NewWaiting(time.Minute, 100, c.now)
	if d := w.Add("run-a", points(1)); len(d) != 0 {
		t.Fatalf("dropped %v", d)
	}
	w.Add("run-a", points(2))
	w.Add("pod:rl/b", points(3))
	got := w.Take("run-a")
	if len(got) != 2 || got[0].DataPointCount() != 1 || got[1].DataPointCount() != 2 {
		t.Fatalf("took %d", len(got))
	}
	if again := w.Take("run-a"); again != nil {
		t.Fatal("taken twice")
	}
	if got := w.Take("pod:rl/b"); len(got) != 1 {
		t.Fatal("the other key's data is gone")
	}
}

func TestWaitingDataPastTheWaitIsDroppedAndCounted(t *testing.T) {
	c := &clock{time.Unix(0, 0)}
	w := NewWaiting(time.Minute, 100, c.now)
	w.Add("run-a", points(2))
	c.t = c.t.Add(30 * time.Second)
	w.Add("run-a", points(3))
	c.t = c.t.Add(31 * time.Second)
	if d := w.Expire(); !maps.Equal(d, Dropped{"run-a": 2}) {
		t.Fatalf("expired %v", d)
	}
	if got := w.Take("run-a"); len(got) != 1 || got[0].DataPointCount() != 3 {
		t.Fatal("the younger data did not stay")
	}
}

func TestWaitingHoldsAtMostItsPointsDroppingTheOldestOfAnyKey(t *testing.T) {
	c := &clock{time.Unix(0, 0)}
	w := NewWaiting(time.Hour, 5, c.now)
	w.Add("a", points(2))
	c.t = c.t.Add(time.Second)
	w.Add("b", points(2))
	c.t = c.t.Add(time.Second)
	if d := w.Add("c", points(2)); !maps.Equal(d, Dropped{"a": 2}) {
		t.Fatalf("dropped %v, want a's 2", d)
	}
	if d := w.Add("d", points(6)); !maps.Equal(d, Dropped{"d": 6}) {
		t.Fatalf("data larger than the bound: dropped %v", d)
	}
	if w.Take("b") == nil || w.Take("c") == nil {
		t.Fatal("younger data was dropped")
	}
}

func TestNoWaitDropsAtOnce(t *testing.T) {
	w := NewWaiting(0, 100, time.Now)
	if d := w.Add("a", points(1)); !maps.Equal(d, Dropped{"a": 1}) {
		t.Fatalf("dropped %v", d)
	}
}
