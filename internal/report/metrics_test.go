package report

import (
	"slices"
	"strings"
	"testing"
)

func TestMetricsAreOneSeriesAMetricAndAxis(t *testing.T) {
	jsonl := `{"run_id":"r","metrics":{"step":1,"_timestamp":100.5,"loss":2,"reward/mean":0.1}}
{"run_id":"r","metrics":{"step":2,"_timestamp":101.5,"loss":1.5}}
{"run_id":"r","metrics":{"_timestamp":102,"loss":9,"inference/throughput":30}}
{"run_id":"r","metrics":{"step":1,"_timestamp":103,"loss":1.9}}
`
	mf, err := readMetrics(strings.NewReader(jsonl))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*Series{}
	for _, s := range mf.Series {
		got[s.Axis+" "+s.Name] = s
	}
	tests := []struct {
		key  string
		x, y []float64
	}{
		// The later post of step 1 wins, as the platform merges a row.
		{"step loss", []float64{1, 2}, []float64{1.9, 1.5}},
		{"step reward/mean", []float64{1}, []float64{0.1}},
		{"time loss", []float64{102}, []float64{9}},
		{"time inference/throughput", []float64{102}, []float64{30}},
	}
	if len(got) != len(tests) {
		t.Fatalf("got series %v, want %d", mf.Series, len(tests))
	}
	for _, tt := range tests {
		s := got[tt.key]
		if s == nil || !slices.Equal(s.X, tt.x) || !slices.Equal(s.Y, tt.y) {
			t.Errorf("%s: got %v, want x %v y %v", tt.key, s, tt.x, tt.y)
		}
	}
}

func TestValuesThatAreNotFiniteNumbersAreCountedWhereTheyWereAndNotPlotted(t *testing.T) {
	// Python's json.dumps writes NaN and Infinity bare; another writer may
	// write null or text.
	jsonl := `{"run_id":"r","metrics":{"step":1,"loss":NaN,"kl":1}}
{"run_id":"r","metrics":{"step":2,"loss":null,"kl":-Infinity}}
{"run_id":"r","metrics":{"step":3,"loss":0.5,"kl":"inf"}}
`
	mf, err := readMetrics(strings.NewReader(jsonl))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range mf.Series {
		switch s.Name {
		case "loss":
			if !slices.Equal(s.X, []float64{3}) || !slices.Equal(s.Dropped, []float64{1, 2}) || s.DroppedCount != 2 {
				t.Errorf("loss: %+v", s)
			}
		case "kl":
			if !slices.Equal(s.X, []float64{1}) || !slices.Equal(s.Dropped, []float64{2, 3}) || s.DroppedCount != 2 {
				t.Errorf("kl: %+v", s)
			}
		default:
			t.Errorf("unexpected series %v", s)
		}
	}
}

func TestALineThatIsNotAPostIsCountedAndTheRestRead(t *testing.T) {
	jsonl := "{\"run_id\":\"r\",\"metrics\":{\"step\":1,\"loss\":1}}\nnot json\n{\"run_id\":\"r\",\"metrics\":{\"loss\":2}}\n{\"run_id\":\"r\",\"metrics\":{\"step\":2,\"lo"
	mf, err := readMetrics(strings.NewReader(jsonl))
	if err != nil {
		t.Fatal(err)
	}
	// Not JSON, no step and no time, cut short: three lines.
	if mf.BadLines != 3 || len(mf.Series) != 1 || len(mf.Series[0].X) != 1 {
		t.Fatalf("bad lines %d, series %v", mf.BadLines, mf.Series)
	}
	if !slices.Equal(mf.BadLineNos, []int{2, 3, 4}) {
		t.Fatalf("bad lines are numbered %v, want 2, 3 and 4", mf.BadLineNos)
	}
}

func TestAMetricsGroupIsItsNamesFirstPathSegment(t *testing.T) {
	tests := map[string]string{
		"reward/mean":              "reward",
		"loss/policy/clip":         "loss",
		"entropy":                  "",
		"reward/mean{env=a/b}":     "reward",
		"throughput{path=/v1/run}": "",
		"/odd":                     "",
	}
	for name, want := range tests {
		if got := Group(name); got != want {
			t.Errorf("Group(%q) = %q, want %q", name, got, want)
		}
	}
}
