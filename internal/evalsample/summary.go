package evalsample

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"strings"
	"sync"

	"github.com/primeintellect/primeexporter/rft"
)

// Summary keys (evals-api.md "Summary", "Prime Traces").
const (
	KeyAvgReward  = "avg_reward"
	KeyAvgMetrics = "avg_metrics"
	KeyAvgError   = "avg_error"
	keyPrimeRuns  = "prime_runs"
	keyTracesSent = "traces_episodes_written"
	// nestedMetric: a user key avg_metrics/<k> is avg_metrics.<k>.
	nestedMetric = KeyAvgMetrics + "/"
)

// Bounds on what a summary holds, against a producer that names a new
// metric per episode: names past them are not kept.
const (
	maxMetricNames = 1024
	maxUserKeys    = 4096
)

// Summary is an evaluation's summary as its episodes and user values
// arrive: avg_reward, avg_metrics and avg_error computed the way the SDK's
// metrics.from_episodes computes them, and the keys the user set, merged
// over them. It is safe for concurrent use; the zero value is an empty
// summary.
type Summary struct {
	mu sync.Mutex
	st SummaryState
}

// SummaryState is what a Summary holds, as sums and counts: small, and
// JSON-able (no NaN or ±Inf in it), so that the run registry can carry
// it across a restart (Summary.MarshalJSON, UnmarshalJSON).
type SummaryState struct {
	// Episodes counts the episodes seen, NotOK those that failed.
	Episodes int64 `json:"episodes"`
	NotOK    int64 `json:"not_ok"`
	// Trainable aggregates the trainable traces; All every trace, kept
	// only while no trainable trace has been seen (nil after).
	Trainable Aggregate  `json:"trainable"`
	All       *Aggregate `json:"all,omitempty"`
	// User is the last finite value of each user key, by its name as
	// given ("avg_metrics/acc" nested only when rendered).
	User map[string]float64 `json:"user,omitempty"`
	// TracesEpisodesWritten is prime_runs.traces_episodes_written; nil
	// when documents do not go to Prime Traces.
	TracesEpisodesWritten *int64 `json:"traces_episodes_written,omitempty"`
}

// Aggregate is the sums of a set of traces.
type Aggregate struct {
	Traces  int64           `json:"traces"`
	Reward  Mean            `json:"reward"`
	Metrics map[string]Mean `json:"metrics,omitempty"`
}

// Mean is a sum and its count.
type Mean struct {
	Sum float64 `json:"sum"`
	// Comp is the running compensation of a sum taken as Python's
	// built-in sum takes it (Neumaier); 0 for a plain running sum.
	Comp  float64 `json:"comp,omitempty"`
	Count int64   `json:"n"`
	// NonFinite tells that a NaN or ±Inf was added, or the sum
	// overflowed: the mean is then not finite, and is left out.
	NonFinite bool `json:"non_finite,omitempty"`
}

// add adds x: compensated as Python's sum() of floats (avg_reward), or as
// the SDK's running sums[name] + value (avg_metrics).
func (m *Mean) add(x float64, compensated bool) {
	m.Count++
	if m.NonFinite || math.IsNaN(x) || math.IsInf(x, 0) {
		m.NonFinite = true
		return
	}
	t := m.Sum + x
	if math.IsInf(t, 0) {
		m.NonFinite = true
		return
	}
	if compensated {
		if math.Abs(m.Sum) >= math.Abs(x) {
			m.Comp += (m.Sum - t) + x
		} else {
			m.Comp += (x - t) + m.Sum
		}
	}
	m.Sum = t
}

// mean is NaN when a non-finite value was added.
func (m Mean) mean() float64 {
	if m.NonFinite {
		return math.NaN()
	}
	sum := m.Sum
	if m.Comp != 0 { // finite: a sum that overflowed is NonFinite; and -0 keeps its sign, as in Python
		sum += m.Comp
	}
	return sum / float64(m.Count)
}

func (a *Aggregate) add(t Trace) {
	a.Traces++
	if t.HasReward {
		a.Reward.add(t.Reward, true)
	}
	for _, m := range t.Metrics {
		mean, ok := a.Metrics[m.Name]
		if !ok && len(a.Metrics) >= maxMetricNames {
			continue
		}
		mean.add(m.Value, false)
		if a.Metrics == nil {
			a.Metrics = map[string]Mean{}
		}
		a.Metrics[m.Name] = mean
	}
}

// NewSummary is an empty summary.
func NewSummary() *Summary { return &Summary{} }

// AddEpisode adds an episode: to avg_error, and its traces to avg_reward
// and avg_metrics. Add each episode once: a record mapped again (a
// replay) would count twice.
func (s *Summary) AddEpisode(e Episode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.st
	st.Episodes++
	if !e.OK {
		st.NotOK++
	}
	if st.Trainable.Traces == 0 && st.All == nil {
		st.All = &Aggregate{}
	}
	for _, t := range e.Traces {
		if st.All != nil {
			st.All.add(t)
		}
		if t.Trainable {
			st.Trainable.add(t)
		}
	}
	if st.Trainable.Traces > 0 {
		st.All = nil // never used again
	}
}

// Set sets a user key: a metric point's or prime.metrics value of the
// evaluation. The last value wins. A NaN or ±Inf is not kept and leaves
// the key's last value in place, as the SDK's _clean_metrics drops it at
// log time; so is a new key past the summary's bound. Set reports whether
// it kept the value.
func (s *Summary) Set(name string, value float64) bool {
	if math.IsNaN(value) || math.IsInf(value, 0) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.st.User[name]; !ok && len(s.st.User) >= maxUserKeys {
		return false
	}
	if s.st.User == nil {
		s.st.User = map[string]float64{}
	}
	s.st.User[name] = value
	return true
}

// AddTracesEpisodes counts n episodes committed to Prime Traces; from the
// first call on, the summary carries prime_runs.traces_episodes_written.
func (s *Summary) AddTracesEpisodes(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	total := n
	if s.st.TracesEpisodesWritten != nil {
		total += *s.st.TracesEpisodesWritten
	}
	s.st.TracesEpisodesWritten = &total
}

// Render is the summary the platform is sent: avg_reward, avg_metrics and
// avg_error computed from the episodes seen, the user keys merged over
// them shallowly (a user avg_metrics/<k> makes avg_metrics a map of the
// user's own), prime_runs.traces_episodes_written merged into prime_runs,
// and no NaN or ±Inf at any depth (rft.FiniteSummary).
func (s *Summary) Render() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.st
	agg := &st.Trainable
	if agg.Traces == 0 && st.All != nil {
		agg = st.All
	}
	avgMetrics := make(map[string]any, len(agg.Metrics))
	for name, m := range agg.Metrics {
		avgMetrics[name] = m.mean()
	}
	out := map[string]any{KeyAvgReward: 0.0, KeyAvgMetrics: avgMetrics, KeyAvgError: 0.0}
	if agg.Reward.Count > 0 {
		out[KeyAvgReward] = agg.Reward.mean()
	}
	if st.Episodes > 0 {
		out[KeyAvgError] = float64(st.NotOK) / float64(st.Episodes)
	}

	var userMetrics map[string]any
	for name, v := range st.User {
		if k, ok := strings.CutPrefix(name, nestedMetric); ok && k != "" {
			if userMetrics == nil {
				userMetrics = map[string]any{}
			}
			userMetrics[k] = v
			continue
		}
		out[name] = v
	}
	if userMetrics != nil {
		out[KeyAvgMetrics] = userMetrics
	}

	if st.TracesEpisodesWritten != nil {
		pr, _ := out[keyPrimeRuns].(map[string]any)
		pr = maps.Clone(pr)
		if pr == nil {
			pr = map[string]any{}
		}
		pr[keyTracesSent] = *st.TracesEpisodesWritten
		out[keyPrimeRuns] = pr
	}
	clean, _ := rft.FiniteSummary(out)
	return clean
}

// State is a copy of what the summary holds.
func (s *Summary) State() SummaryState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.clone()
}

// Restore replaces what the summary holds with st.
func (s *Summary) Restore(st SummaryState) {
	st = st.clone()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st = st
}

func (st SummaryState) clone() SummaryState {
	out := st
	out.Trainable = st.Trainable.clone()
	if st.All != nil {
		all := st.All.clone()
		out.All = &all
	}
	out.User = maps.Clone(st.User)
	if st.TracesEpisodesWritten != nil {
		n := *st.TracesEpisodesWritten
		out.TracesEpisodesWritten = &n
	}
	return out
}

func (a Aggregate) clone() Aggregate {
	a.Metrics = maps.Clone(a.Metrics)
	return a
}

// MarshalJSON is the summary's State as JSON.
func (s *Summary) MarshalJSON() ([]byte, error) {
	return json.Marshal(s.State())
}

// UnmarshalJSON restores the summary from MarshalJSON's JSON.
func (s *Summary) UnmarshalJSON(b []byte) error {
	var st SummaryState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("evalsample: summary: %w", err)
	}
	s.Restore(st)
	return nil
}
