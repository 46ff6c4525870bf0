package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// durableConfig is the Reliability config of docs/operations.md as far as
// durability goes: the run registry and the queue on file_storage, and
// nothing else of the queue or of retry_on_failure set, so both are the
// exporter's defaults. step_interval 1 puts every step's episodes in the
// table. maxElapsed, when set, is retry_on_failure::max_elapsed_time
// (PRIME_OUTAGE_MAX_ELAPSED).
func durableConfig(t *testing.T, maxElapsed string) string {
	t.Helper()
	p := collectorParams{Team: "team-e2e", Storage: true, StepInterval: "1"}
	if maxElapsed != "" {
		p.Retry = &retryParams{MaxElapsedTime: maxElapsed}
	}
	return collectorConfig(t, "node", p)
}

// exporterhelperLimit is retry_on_failure's max_elapsed_time in
// exporterhelper's default config: a request still failing after it is
// dropped. The exporter's default has no limit.
const exporterhelperLimit = 5 * time.Minute

// longOutage is one long-outage scenario.
type longOutage struct {
	outage time.Duration // how long the platform answers 503 to everything
	// kills are when, into the outage, the collector is killed (kill -9)
	// and started again on the same storage. The last collector must face
	// more than exporterhelperLimit of the outage on its own: the limit
	// counts from a request's first attempt in one process.
	kills []time.Duration
	steps int
}

// The CI variant: the last collector faces 5 m 15 s of the outage, more
// than exporterhelper's limit from its first attempt (a batch waits up to
// the 5 s flush_timeout after the start), so the control
// (PRIME_OUTAGE_MAX_ELAPSED=5m) loses data. The ten-minute variant is
// longoutage_ten_test.go (scripts/outage.sh).
func TestAPlatformOutageLongerThanExporterhelpersLimitWithTwoKillsLosesNothingOnTheDefaultRetry(t *testing.T) {
	t.Parallel() // mostly waiting: it overlaps the other parallel tests
	runLongOutage(t, longOutage{outage: 5*time.Minute + 45*time.Second, kills: []time.Duration{15 * time.Second, 30 * time.Second}, steps: 30})
}

func runLongOutage(t *testing.T, p longOutage) {
	otelcol, trainer := binaries(t)
	if last := p.outage - p.kills[len(p.kills)-1]; last <= exporterhelperLimit+10*time.Second {
		t.Fatalf("the last collector faces %s of the outage: not past exporterhelper's limit of %s", last, exporterhelperLimit)
	}
	maxElapsed := os.Getenv("PRIME_OUTAGE_MAX_ELAPSED")
	if v := maxElapsed; v != "" {
		// The control: exporterhelper's old limit set by hand loses data.
		t.Logf("CONTROL: retry_on_failure::max_elapsed_time: %s (this run is expected to lose data)", v)
	}
	config := durableConfig(t, maxElapsed)
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey, AllowedTeams: []string{"team-e2e"}})
	defer platform.Close()
	addr := freeAddr(t)
	env := []string{
		"PRIME_OTLP_HTTP=" + addr, "PRIME_API_BASE=" + platform.BaseURL(), "PRIME_API_KEY=" + e2eKey,
		"PRIME_STORAGE_DIR=" + t.TempDir(),
	}
	collectors := []*collector{startCollector(t, otelcol, config, env...)}
	current := func() *collector { return collectors[len(collectors)-1] }

	manifestPath := filepath.Join(t.TempDir(), "manifest.json")
	type exit struct {
		out string
		err error
	}
	done := make(chan exit, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go func() {
		out, err := exec.CommandContext(ctx, trainer, "-endpoint", addr, "-steps", itoa(p.steps), "-run-key", "long-outage",
			"-step-delay", "400ms", "-manifest", manifestPath).CombinedOutput()
		done <- exit{string(out), err}
	}()

	// The platform goes down mid-run, once the run and its first step are
	// on it (the first batch, after the queue's 5 s flush_timeout); the
	// trainer, 400 ms a step, goes on for several seconds into the outage.
	waitFor(t, current(), "the run's first step on the platform", time.Minute, func() bool {
		runs := platform.Runs()
		return len(runs) == 1 && len(runs[0].Metrics) >= 1
	})
	platform.SetOutage(&rfttest.Fault{Status: 503})
	began := time.Now()
	stepsBefore := len(platform.Runs()[0].Metrics)
	select {
	case e := <-done:
		if e.err != nil {
			fatalf(t, current(), "the trainer failed: %v\n%s", e.err, e.out)
		}
	case <-time.After(time.Until(began.Add(p.kills[0]))):
		fatalf(t, current(), "the trainer was still running at the first kill")
	}
	sent := readManifest(t, manifestPath)
	trained := time.Since(began)

	refused := func() int { return platform.Outages()[0].Refused }
	waitFor(t, current(), "a refused request", time.Minute, func() bool { return refused() > 0 })
	var lastStart time.Duration
	for i, at := range p.kills {
		time.Sleep(time.Until(began.Add(at)))
		current().kill()
		lastStart = time.Since(began)
		atKill := refused()
		collectors = append(collectors, startCollector(t, otelcol, config, env...))
		// The new collector takes up the queue and is refused too.
		waitFor(t, current(), "a refused request from the restarted collector", time.Minute, func() bool { return refused() > atKill })
		t.Logf("kill -9 %d at %s into the outage, %d requests refused by then; the restarted collector was refused %s after the kill",
			i+1, lastStart.Round(100*time.Millisecond), atKill, (time.Since(began) - lastStart).Round(100*time.Millisecond))
	}
	time.Sleep(time.Until(began.Add(p.outage)))
	platform.SetOutage(nil)
	ended := time.Now()
	outage := platform.Outages()[0]
	last := current()

	for deadline := ended.Add(3 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		runs := platform.Runs()
		if len(runs) == 1 && len(notLanded(runs[0], sent, p.steps)) == 0 {
			break
		}
		if time.Now().After(deadline) {
			var lost []string
			for _, r := range runs {
				lost = append(lost, notLanded(r, sent, p.steps)...)
			}
			dropped := linesWith(collectorLogs(collectors), "Dropping data")
			t.Fatalf("3 minutes after the outage, %d run(s) on the platform, missing: %s\n%d \"Dropping data\" lines in the collectors' logs:\n%s",
				len(runs), strings.Join(lost, "; "), len(dropped), strings.Join(dropped, "\n"))
		}
	}
	drained := time.Since(ended)
	waitFor(t, last, "the run's close-out", 2*time.Minute, func() bool { return platform.Runs()[0].Status == rfttest.StatusCompleted })
	closed := time.Since(ended)
	last.stop()

	runs := platform.Runs()
	if len(runs) != 1 {
		fatalf(t, last, "want exactly one run, got %d", len(runs))
	}
	run := runs[0]
	// Each value landed once: a post accepted again after a restart (the
	// persistent queue hands back the whole batch whose first steps had
	// landed, and the values sent are remembered only in memory) carries
	// the same value, and the platform merges a step's posts.
	posts := acceptedMetricPosts(t, platform.Requests())
	again := 0
	for step := int64(1); step <= int64(p.steps); step++ {
		for _, key := range []string{"loss", "reward/mean", "lr", "grad_norm"} {
			got := posts[step][key]
			if len(got) == 0 {
				t.Fatalf("step %d's %q was never accepted", step, key)
			}
			for _, post := range got[1:] {
				if post.value != got[0].value {
					t.Fatalf("step %d's %q was accepted with different values: %v", step, key, got)
				}
			}
			again += len(got) - 1
		}
	}
	byStep := map[int64][][]byte{}
	for _, o := range run.Objects {
		if !o.Confirmed {
			fatalf(t, last, "object %s was uploaded but never confirmed", o.Key)
		}
		byStep[o.Step] = append(byStep[o.Step], o.Body)
	}
	rows := int64(0)
	for step := int64(1); step <= int64(p.steps); step++ {
		want := sent.TrainByDispatch[itoa(int(step))]
		checkStepRows(t, run.ID, step, byStep[step], want)
		rows += want
	}
	checkOutageLines(t, collectors, p)

	t.Logf("outage %s (503 to every route; the last collector faced %s of it), %d kill -9s at %v, each restart on the same storage",
		outage.Ended.Sub(outage.Began).Round(time.Second), (p.outage - lastStart).Round(time.Second), len(p.kills), p.kills)
	t.Logf("trainer: %d steps, %d episodes (%d train, %d eval), acknowledged %s into the outage; %d step(s) had landed before it",
		sent.Steps, sent.Episodes, sent.Episodes-sent.EvalEpisodes, sent.EvalEpisodes, trained.Round(100*time.Millisecond), stepsBefore)
	t.Logf("refused during the outage: %d requests %v", outage.Refused, outage.ByRoute)
	t.Logf("after it: one run, %d steps × 4 checked metrics each landed (%d of those values accepted again after a restart, each the same value), %d rows in %d confirmed objects, each episode once; everything landed %s after the outage, the run completed %s after it",
		p.steps, again, rows, len(run.Objects), drained.Round(100*time.Millisecond), closed.Round(100*time.Millisecond))
	if strings.Contains(collectorLogs(collectors), e2eKey) {
		t.Fatal("the API key appears in a collector's output")
	}
}

// notLanded names what of the run has not landed: a step's metrics, or its
// episodes' objects.
func notLanded(run rfttest.Run, sent manifest, steps int) []string {
	objects := map[int64]int{}
	for _, o := range run.Objects {
		if o.Confirmed {
			objects[o.Step]++
		}
	}
	var out []string
	for step := int64(1); step <= int64(steps); step++ {
		for _, key := range []string{"loss", "grad_norm"} { // one from each pipeline
			if _, ok := run.Metrics[step][key]; !ok {
				out = append(out, fmt.Sprintf("step %d's %s", step, key))
			}
		}
		if sent.TrainByDispatch[itoa(int(step))] > 0 && objects[step] == 0 {
			out = append(out, fmt.Sprintf("step %d's episodes", step))
		}
	}
	return out
}

// metricPost is one accepted post's value of a key.
type metricPost struct {
	at    time.Time
	value float64
}

func (m metricPost) String() string {
	return fmt.Sprintf("%g at %s", m.value, m.at.Format("15:04:05.000"))
}

// acceptedMetricPosts lists, per step and key, the values of the metrics
// posts the platform accepted (those the outage did not refuse).
func acceptedMetricPosts(t *testing.T, reqs []rfttest.Request) map[int64]map[string][]metricPost {
	t.Helper()
	out := map[int64]map[string][]metricPost{}
	for _, r := range reqs {
		if !strings.HasSuffix(r.Path, "/rft/metrics") || r.Outage {
			continue
		}
		var body struct {
			Metrics map[string]float64 `json:"metrics"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatalf("metrics post %s: %v", r.Body, err)
		}
		step := int64(body.Metrics["step"])
		if out[step] == nil {
			out[step] = map[string][]metricPost{}
		}
		for k, v := range body.Metrics {
			out[step][k] = append(out[step][k], metricPost{r.Time, v})
		}
	}
	return out
}

// The outage's log lines (internal/platform/outage.go), each collector for its own
// part of the outage: a warning for the platform API once it failed for
// over a minute, and from the last collector one line when it answered
// again.
const (
	outageWarning  = "Outage: every call to the service has failed for over a minute"
	outageRecovery = "Outage over: the service answers again"
)

func checkOutageLines(t *testing.T, collectors []*collector, p longOutage) {
	t.Helper()
	for i, c := range collectors {
		warnings := linesWith(c.out.String(), outageWarning, `"service": "platform API"`)
		recoveries := linesWith(c.out.String(), outageRecovery, `"service": "platform API"`)
		lived := p.outage
		if i < len(p.kills) {
			lived = p.kills[i]
			if i > 0 {
				lived -= p.kills[i-1]
			}
		} else {
			lived -= p.kills[len(p.kills)-1]
		}
		// A collector that faced the outage for well over a minute warned
		// once; one that faced it for well under, never.
		switch {
		case lived > 2*time.Minute && len(warnings) != 1,
			lived < 45*time.Second && len(warnings) != 0,
			len(warnings) > 1:
			t.Fatalf("collector %d faced %s of the outage and logged %d warnings:\n%s", i+1, lived, len(warnings), strings.Join(warnings, "\n"))
		}
		wantRecoveries := 0
		if i == len(collectors)-1 {
			wantRecoveries = 1
		}
		if len(recoveries) != wantRecoveries {
			t.Fatalf("collector %d logged %d recovery lines, want %d:\n%s", i+1, len(recoveries), wantRecoveries, strings.Join(recoveries, "\n"))
		}
		// Every service's lines, object storage's too (a PUT presigned
		// before the outage fails with it).
		for _, l := range append(linesWith(c.out.String(), outageWarning), linesWith(c.out.String(), outageRecovery)...) {
			t.Logf("collector %d: %s", i+1, l)
		}
	}
}

// linesWith returns the lines of out holding every fragment.
func linesWith(out string, fragments ...string) []string {
	var lines []string
	for l := range strings.SplitSeq(out, "\n") {
		all := true
		for _, f := range fragments {
			all = all && strings.Contains(l, f)
		}
		if all {
			lines = append(lines, l)
		}
	}
	return lines
}

func collectorLogs(collectors []*collector) string {
	var b strings.Builder
	for _, c := range collectors {
		b.WriteString(c.out.String())
	}
	return b.String()
}
