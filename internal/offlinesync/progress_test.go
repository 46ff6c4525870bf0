package offlinesync

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPlainLinesReportObjectsAndEachRunsMetrics(t *testing.T) {
	var out bytes.Buffer
	l := NewLines(&out)
	l.Start(1, 2048)
	l.Run(1, "d")
	l.Sent("d", "", 10)
	l.Sent("d", "", 10)
	l.Sent("d", "step_2_0.parquet", 2000)
	l.Ended("d", nil)
	l.Finish()
	assert.Equal(t, "prime-sync: 1 run(s), 2.0 kB to send\n"+
		"prime-sync: run 1: d\n"+
		"prime-sync: d: 2 metrics line(s) posted (20 B)\n"+
		"prime-sync: d: object step_2_0.parquet confirmed (2.0 kB)\n"+
		"prime-sync: d: synced (1/1 runs ended)\n", out.String())
}

func TestPlainLinesKeepRunsSyncingAtOnceApart(t *testing.T) {
	var out bytes.Buffer
	l := NewLines(&out)
	l.Start(2, 4096)
	l.Run(1, "a")
	l.Run(2, "b")
	l.Sent("a", "", 10)
	l.Sent("b", "", 20)
	l.Sent("b", "", 20)
	l.Sent("a", "step_2_0.parquet", 2000) // a's metrics, not b's
	l.Ended("b", errors.New("posting metrics: 503"))
	l.Ended("a", nil)
	l.Finish()
	assert.Equal(t, "prime-sync: 2 run(s), 4.1 kB to send\n"+
		"prime-sync: run 1: a\n"+
		"prime-sync: run 2: b\n"+
		"prime-sync: a: 1 metrics line(s) posted (10 B)\n"+
		"prime-sync: a: object step_2_0.parquet confirmed (2.0 kB)\n"+
		"prime-sync: b: 2 metrics line(s) posted (40 B)\n"+
		"prime-sync: b: not finished (1/2 runs ended): posting metrics: 503\n"+
		"prime-sync: a: synced (2/2 runs ended)\n", out.String())
}

func TestTheBarShowsRunsObjectsAndBytesOverAllRuns(t *testing.T) {
	tests := []struct {
		name   string
		events func(b *Bar)
		want   []string
	}{
		{
			name: "two runs at once, under way",
			events: func(b *Bar) {
				b.Run(1, "d")
				b.Run(2, "e")
				b.Sent("d", "step_2_0.parquet", 3000)
			},
			want: []string{"runs 0/2 · 2 syncing · objects 1"},
		},
		{
			name: "both ended, one with something left",
			events: func(b *Bar) {
				b.Run(1, "d")
				b.Run(2, "e")
				b.Sent("d", "", 1000)
				b.Sent("d", "step_2_0.parquet", 3000)
				b.Ended("d", nil)
				b.Ended("e", errors.New("platform down"))
			},
			want: []string{"runs 2/2 · objects 1 · 1 left", "4.0 kB", "100%", "MB/s"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			b := NewBar(&out)
			b.Start(2, 4000)
			tt.events(b)
			b.Finish()
			for _, want := range tt.want {
				assert.Contains(t, out.String(), want)
			}
		})
	}
}
