package ambient

import (
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Waiting holds named ambient data whose run has not opened yet, by what
// it will join (a run key, or a pod's key), for at most wait and at most
// maxPoints points in all: the oldest goes first. It sends nothing itself:
// the next push for the same key takes what waited (Take) and sends it
// first.
type Waiting struct {
	mu        sync.Mutex
	wait      time.Duration
	maxPoints int
	now       func() time.Time
	byKey     map[string][]waiter
	points    int
}

type waiter struct {
	at     time.Time
	md     pmetric.Metrics
	points int
}

// NewWaiting holds data for wait, at most maxPoints points.
func NewWaiting(wait time.Duration, maxPoints int, now func() time.Time) *Waiting {
	return &Waiting{wait: wait, maxPoints: maxPoints, now: now, byKey: map[string][]waiter{}}
}

// Dropped is data Waiting let go: by the key it waited under, its points.
type Dropped map[string]int

// Add keeps md (whose points are its own) under key and returns what had
// to go to make room, or what md itself was when it cannot wait at all.
func (w *Waiting) Add(key string, md pmetric.Metrics) Dropped {
	n := md.DataPointCount()
	if w.wait <= 0 || n > w.maxPoints {
		return Dropped{key: n}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	dropped := w.expireLocked()
	w.byKey[key] = append(w.byKey[key], waiter{at: w.now(), md: md, points: n})
	w.points += n
	for w.points > w.maxPoints {
		k := w.oldestLocked()
		ws := w.byKey[k]
		dropped.add(k, ws[0].points)
		w.points -= ws[0].points
		w.setLocked(k, ws[1:])
	}
	return dropped
}

// Take removes and returns what waits under key, oldest first.
func (w *Waiting) Take(key string) []pmetric.Metrics {
	w.mu.Lock()
	defer w.mu.Unlock()
	ws := w.byKey[key]
	if len(ws) == 0 {
		return nil
	}
	delete(w.byKey, key)
	out := make([]pmetric.Metrics, len(ws))
	for i, x := range ws {
		out[i] = x.md
		w.points -= x.points
	}
	return out
}

// Expire lets go of what waited longer than wait.
func (w *Waiting) Expire() Dropped {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.expireLocked()
}

func (w *Waiting) expireLocked() Dropped {
	dropped := Dropped{}
	cut := w.now().Add(-w.wait)
	for k, ws := range w.byKey {
		i := 0
		for i < len(ws) && !ws[i].at.After(cut) {
			dropped.add(k, ws[i].points)
			w.points -= ws[i].points
			i++
		}
		w.setLocked(k, ws[i:])
	}
	return dropped
}

func (w *Waiting) oldestLocked() string {
	var key string
	var at time.Time
	for k, ws := range w.byKey {
		if key == "" || ws[0].at.Before(at) {
			key, at = k, ws[0].at
		}
	}
	return key
}

func (w *Waiting) setLocked(k string, ws []waiter) {
	if len(ws) == 0 {
		delete(w.byKey, k)
		return
	}
	w.byKey[k] = ws
}

func (d Dropped) add(k string, n int) {
	if n > 0 {
		d[k] += n
	}
}
