package evalsample

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// tr is a trace with a reward and metrics.
func tr(trainable bool, reward float64, metrics ...Metric) Trace {
	return Trace{Trainable: trainable, Reward: reward, HasReward: true, Metrics: metrics}
}

// summaryOf is the rendered summary of the episodes.
func summaryOf(episodes ...Episode) map[string]any {
	s := NewSummary()
	for _, e := range episodes {
		s.AddEpisode(e)
	}
	return s.Render()
}

func TestTheSummaryAveragesAsTheSDKDoes(t *testing.T) {
	ok := func(traces ...Trace) Episode { return Episode{OK: true, Traces: traces} }
	tests := []struct {
		name     string
		episodes []Episode
		want     map[string]any
	}{
		{"an empty run gives zeros rather than dividing by zero", nil,
			map[string]any{"avg_reward": 0.0, "avg_metrics": map[string]any{}, "avg_error": 0.0}},
		{"only trainable traces are scored: a judge's 0 does not halve a solver's average",
			[]Episode{ok(tr(true, 1), tr(false, 0))},
			map[string]any{"avg_reward": 1.0, "avg_metrics": map[string]any{}, "avg_error": 0.0}},
		{"all traces count when none is trainable",
			[]Episode{ok(tr(false, 1), tr(false, 0))},
			map[string]any{"avg_reward": 0.5, "avg_metrics": map[string]any{}, "avg_error": 0.0}},
		{"untrainable traces stop counting once the run has a trainable one",
			[]Episode{ok(tr(false, 0, Metric{"m", 9})), ok(tr(true, 1, Metric{"m", 1}))},
			map[string]any{"avg_reward": 1.0, "avg_metrics": map[string]any{"m": 1.0}, "avg_error": 0.0}},
		{"sub-rewards and metrics average together",
			[]Episode{ok(tr(true, 1, Metric{"format", 1}, Metric{"turns", 4})), ok(tr(true, 0, Metric{"format", 0}, Metric{"turns", 6}))},
			map[string]any{"avg_reward": 0.5, "avg_metrics": map[string]any{"format": 0.5, "turns": 5.0}, "avg_error": 0.0}},
		{"a metric only some traces have averages over those traces",
			[]Episode{ok(tr(true, 0, Metric{"partial", 1})), ok(tr(true, 0))},
			map[string]any{"avg_reward": 0.0, "avg_metrics": map[string]any{"partial": 1.0}, "avg_error": 0.0}},
		{"avg_error counts episodes, not traces, those without traces too",
			[]Episode{ok(tr(true, 1), tr(true, 1)), {OK: false}},
			map[string]any{"avg_reward": 1.0, "avg_metrics": map[string]any{}, "avg_error": 0.5}},
		{"a trace without a reward does not count for avg_reward",
			[]Episode{ok(tr(true, 1), Trace{Trainable: true, Metrics: []Metric{{"m", 2}}})},
			map[string]any{"avg_reward": 1.0, "avg_metrics": map[string]any{"m": 2.0}, "avg_error": 0.0}},
		{"a non-finite reward leaves avg_reward out, and nothing else",
			[]Episode{ok(tr(true, math.NaN(), Metric{"m", 1})), ok(tr(true, 1))},
			map[string]any{"avg_metrics": map[string]any{"m": 1.0}, "avg_error": 0.0}},
		{"a non-finite metric leaves that metric out",
			[]Episode{ok(tr(true, 1, Metric{"m", math.Inf(1)}, Metric{"n", 1})), ok(tr(true, 1, Metric{"m", 1}))},
			map[string]any{"avg_reward": 1.0, "avg_metrics": map[string]any{"n": 1.0}, "avg_error": 0.0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summaryOf(tt.episodes...); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("summary %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestTheSummarysNumbersAreTheSDKsToTheBit(t *testing.T) {
	// Python: sum(0.1 for _ in range(10)) / 10 == 0.1 (its sum compensates),
	// while from_episodes' running sums[name] + value gives
	// 0.9999999999999999 / 10.
	s := NewSummary()
	for range 10 {
		s.AddEpisode(Episode{OK: true, Traces: []Trace{tr(true, 0.1, Metric{"m", 0.1})}})
	}
	got := s.Render()
	if r := got["avg_reward"].(float64); r != 0.1 {
		t.Errorf("avg_reward %v, want 0.1", r)
	}
	if m := got["avg_metrics"].(map[string]any)["m"].(float64); m != 0.9999999999999999/10 {
		t.Errorf("avg_metrics.m %v, want %v", m, 0.9999999999999999/10)
	}
}

func TestTheFixturesEpisodeGivesItsSummary(t *testing.T) {
	res, err := FromRecord(pcommon.NewValueStr(fixtureText(t)), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"avg_reward": 1.0, "avg_metrics": map[string]any{"correct_answer": 1.0, "num_turns": 2.0}, "avg_error": 0.0}
	if got := summaryOf(res.Episode); !reflect.DeepEqual(got, want) {
		t.Fatalf("summary %v\nwant %v", got, want)
	}
}

func TestUserKeysAreMergedOverTheComputedOnesShallowly(t *testing.T) {
	type set struct {
		name  string
		value float64
	}
	episode := Episode{OK: true, Traces: []Trace{tr(true, 1, Metric{"acc", 0.5})}}
	tests := []struct {
		name string
		sets []set
		want map[string]any
	}{
		{"a key of its own is added", []set{{"loss", 0.25}},
			map[string]any{"avg_reward": 1.0, "avg_metrics": map[string]any{"acc": 0.5}, "avg_error": 0.0, "loss": 0.25}},
		{"the last value wins", []set{{"loss", 0.25}, {"loss", 0.5}},
			map[string]any{"avg_reward": 1.0, "avg_metrics": map[string]any{"acc": 0.5}, "avg_error": 0.0, "loss": 0.5}},
		{"a NaN leaves the last value", []set{{"loss", 0.25}, {"loss", math.NaN()}},
			map[string]any{"avg_reward": 1.0, "avg_metrics": map[string]any{"acc": 0.5}, "avg_error": 0.0, "loss": 0.25}},
		{"a user avg_reward replaces the computed one", []set{{"avg_reward", 0.75}},
			map[string]any{"avg_reward": 0.75, "avg_metrics": map[string]any{"acc": 0.5}, "avg_error": 0.0}},
		{"avg_metrics/<k> nests, and replaces the computed avg_metrics whole", []set{{"avg_metrics/pass@1", 0.4}},
			map[string]any{"avg_reward": 1.0, "avg_metrics": map[string]any{"pass@1": 0.4}, "avg_error": 0.0}},
		{"a nested avg_metrics wins over a user number", []set{{"avg_metrics/k", 0.4}, {"avg_metrics", 3}},
			map[string]any{"avg_reward": 1.0, "avg_metrics": map[string]any{"k": 0.4}, "avg_error": 0.0}},
		{"avg_metrics/ alone is a key of its own", []set{{"avg_metrics/", 1}},
			map[string]any{"avg_reward": 1.0, "avg_metrics": map[string]any{"acc": 0.5}, "avg_error": 0.0, "avg_metrics/": 1.0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSummary()
			s.AddEpisode(episode)
			for _, st := range tt.sets {
				s.Set(st.name, st.value)
			}
			if got := s.Render(); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("summary %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestUserKeysAreBounded(t *testing.T) {
	s := NewSummary()
	for i := range maxUserKeys {
		if !s.Set("k"+strconv.Itoa(i), 1) {
			t.Fatalf("key %d refused below the bound", i)
		}
	}
	if s.Set("one-too-many", 1) {
		t.Fatal("a key past the bound was kept")
	}
	if !s.Set("k0", 2) || s.Render()["k0"] != 2.0 {
		t.Fatal("a known key can no longer be set")
	}
}

func TestTracesEpisodesWrittenJoinsPrimeRuns(t *testing.T) {
	s := NewSummary()
	if _, ok := s.Render()["prime_runs"]; ok {
		t.Fatal("prime_runs before any episode went to Prime Traces")
	}
	s.AddTracesEpisodes(0)
	if got := s.Render()["prime_runs"]; !reflect.DeepEqual(got, map[string]any{"traces_episodes_written": int64(0)}) {
		t.Fatalf("prime_runs %v, want a count of 0 once traces are on", got)
	}
	s.AddTracesEpisodes(3)
	s.AddTracesEpisodes(2)
	s.Set("prime_runs", 1) // a user number is no map to merge into
	if got := s.Render()["prime_runs"]; !reflect.DeepEqual(got, map[string]any{"traces_episodes_written": int64(5)}) {
		t.Fatalf("prime_runs %v, want 5 episodes", got)
	}
}

func TestASummaryRestoredFromItsJSONGoesOnAsIfNeverStopped(t *testing.T) {
	feed := func(s *Summary, from, to int) {
		for i := from; i < to; i++ {
			s.AddEpisode(Episode{OK: i%3 != 0, Traces: []Trace{tr(i%2 == 0, 0.1, Metric{"m", 0.1}), tr(false, 7)}})
		}
	}
	whole := NewSummary()
	whole.Set("avg_metrics/x", 0.5)
	whole.AddTracesEpisodes(4)
	feed(whole, 0, 20)

	first := NewSummary()
	first.Set("avg_metrics/x", 0.5)
	first.AddTracesEpisodes(4)
	feed(first, 0, 7)
	saved, err := json.Marshal(first)
	if err != nil {
		t.Fatal(err)
	}
	restarted := NewSummary()
	if err := json.Unmarshal(saved, restarted); err != nil {
		t.Fatal(err)
	}
	feed(restarted, 7, 20)
	if got, want := restarted.Render(), whole.Render(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after a restart %v\nwithout one %v", got, want)
	}
	if got, want := restarted.State(), whole.State(); !reflect.DeepEqual(got, want) {
		t.Fatalf("state after a restart %+v\nwithout one %+v", got, want)
	}
}

func TestASummaryWithNonFiniteValuesStillSaves(t *testing.T) {
	s := NewSummary()
	s.AddEpisode(Episode{OK: true, Traces: []Trace{tr(false, math.NaN(), Metric{"m", math.Inf(-1)})}})
	s.AddEpisode(Episode{OK: true, Traces: []Trace{tr(false, math.MaxFloat64), tr(false, math.MaxFloat64)}})
	saved, err := json.Marshal(s)
	if err != nil {
		t.Fatalf("a summary that saw NaN does not save: %v", err)
	}
	back := NewSummary()
	if err := json.Unmarshal(saved, back); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"avg_metrics": map[string]any{}, "avg_error": 0.0}
	if got := back.Render(); !reflect.DeepEqual(got, want) {
		t.Fatalf("summary %v, want the non-finite averages left out", got)
	}
	if err := json.Unmarshal([]byte(`[1]`), back); err == nil {
		t.Fatal("a summary took JSON that is not its own")
	}
}

func TestAStateIsACopy(t *testing.T) {
	s := NewSummary()
	s.AddEpisode(Episode{OK: true, Traces: []Trace{tr(false, 1, Metric{"m", 1})}})
	s.Set("k", 1)
	st := s.State()
	st.User["k"] = 2
	st.All.Metrics["m"] = Mean{Sum: 9, Count: 1}
	if got := s.Render(); got["k"] != 1.0 || got["avg_metrics"].(map[string]any)["m"] != 1.0 {
		t.Fatalf("changing a state changed the summary: %v", got)
	}
	s.Restore(st)
	st.User["k"] = 3
	if got := s.Render(); got["k"] != 2.0 {
		t.Fatalf("restore kept the caller's map: %v", got)
	}
}

func TestASummaryIsSafeForConcurrentUse(t *testing.T) {
	s := NewSummary()
	const workers, each = 4, 100
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				s.AddEpisode(Episode{OK: i%2 == 0, Traces: []Trace{tr(true, 1, Metric{"m", 2})}})
				s.Set("w"+strconv.Itoa(w), float64(i))
				s.AddTracesEpisodes(1)
				_ = s.Render()
				_, _ = json.Marshal(s)
			}
		})
	}
	wg.Wait()
	st := s.State()
	if st.Episodes != workers*each || st.NotOK != workers*each/2 || st.Trainable.Traces != workers*each ||
		*st.TracesEpisodesWritten != workers*each {
		t.Fatalf("state %+v after %d episodes", st, workers*each)
	}
	if got := s.Render(); got["avg_reward"] != 1.0 || got["avg_error"] != 0.5 || got["w3"] != float64(each-1) {
		t.Fatalf("summary %v", got)
	}
}
