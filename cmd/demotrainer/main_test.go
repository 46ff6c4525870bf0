package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/primeintellect/primeexporter/cmd/internal/trainerlib"
	"github.com/primeintellect/primeexporter/cmd/internal/trainerlib/otlptest"
)

func noEnv(string) string { return "" }

// runDemo runs the whole program against c with quick defaults plus args.
func runDemo(t *testing.T, c *otlptest.Collector, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	all := append([]string{"-endpoint", c.URL, "-steps", "6", "-step-delay", "0", "-export-timeout", "2s"}, args...)
	err := trainerlib.Execute(context.Background(), all, &stdout, &stderr, noEnv, parseConfig, run)
	return stdout.String(), err
}

func intAttr(t *testing.T, attrs map[string]*commonpb.AnyValue, key string) int64 {
	t.Helper()
	v, ok := attrs[key]
	if !ok {
		t.Fatalf("no %s attribute in %v", key, attrs)
	}
	if _, isInt := v.GetValue().(*commonpb.AnyValue_IntValue); !isInt {
		t.Fatalf("%s = %v, want an int", key, v)
	}
	return v.GetIntValue()
}

func TestEveryRequestCarriesTheRunsResource(t *testing.T) {
	c := otlptest.NewCollector(t, 0)
	if _, err := runDemo(t, c, "-run-key", "key-1", "-run-name", "name-1", "-model", "m/1", "-episodes-per-step", "3"); err != nil {
		t.Fatal(err)
	}
	resources := c.Resources()
	if len(resources) == 0 {
		t.Fatal("nothing received")
	}
	for _, res := range resources {
		for key, want := range map[string]string{
			"service.name": "demotrainer", "prime.run.key": "key-1", "prime.run.name": "name-1", "prime.run.model": "m/1",
		} {
			if got := res[key].GetStringValue(); got != want {
				t.Errorf("%s = %q, want %q", key, got, want)
			}
		}
		for key, want := range map[string]int64{
			"prime.training.max_steps": 6, "prime.training.batch_size": 3,
			"prime.training.rollouts_per_example": 2, "prime.training.seq_len": seqLen,
		} {
			if got := intAttr(t, res, key); got != want {
				t.Errorf("%s = %d, want %d", key, got, want)
			}
		}
		var envs []string
		for _, v := range res["prime.run.environments"].GetArrayValue().GetValues() {
			envs = append(envs, v.GetStringValue())
		}
		if want := []string{"primeintellect/gsm8k", "primeintellect/vf-math@v3"}; !slices.Equal(envs, want) {
			t.Errorf("prime.run.environments = %v, want the array %v", envs, want)
		}
		var runConfig struct {
			Trainer struct{ LR float64 } `json:"trainer"`
		}
		if err := json.Unmarshal([]byte(res["prime.run.config"].GetStringValue()), &runConfig); err != nil || runConfig.Trainer.LR != learningRate {
			t.Errorf("prime.run.config = %q (%v), want a JSON object with trainer.lr", res["prime.run.config"].GetStringValue(), err)
		}
		if _, ok := res["prime.run.id"]; ok {
			t.Error("prime.run.id is set without -run-id")
		}
		if _, ok := res["prime.run.team_id"]; ok {
			t.Error("prime.run.team_id is set without -team-id")
		}
		if _, ok := res["k8s.pod.name"]; ok {
			t.Error("k8s.pod.name is set without -pod")
		}
	}
}

func TestAPodNamesTheTrainersNamespaceAndPod(t *testing.T) {
	c := otlptest.NewCollector(t, 0)
	if _, err := runDemo(t, c, "-pod", "rl/trainer-a-0"); err != nil {
		t.Fatal(err)
	}
	for _, res := range c.Resources() {
		if ns, pod := res["k8s.namespace.name"].GetStringValue(), res["k8s.pod.name"].GetStringValue(); ns != "rl" || pod != "trainer-a-0" {
			t.Errorf("k8s.namespace.name %q, k8s.pod.name %q", ns, pod)
		}
	}
}

func TestRunIDAttachesToAnExistingRun(t *testing.T) {
	c := otlptest.NewCollector(t, 0)
	if _, err := runDemo(t, c, "-run-id", "run-abc", "-steps", "1"); err != nil {
		t.Fatal(err)
	}
	for _, res := range c.Resources() {
		if got := res["prime.run.id"].GetStringValue(); got != "run-abc" {
			t.Fatalf("prime.run.id = %q, want run-abc", got)
		}
	}
}

func TestTeamIDNamesTheRunsTeam(t *testing.T) {
	c := otlptest.NewCollector(t, 0)
	if _, err := runDemo(t, c, "-team-id", "team-a", "-steps", "1"); err != nil {
		t.Fatal(err)
	}
	for _, res := range c.Resources() {
		if got := res["prime.run.team_id"].GetStringValue(); got != "team-a" {
			t.Fatalf("prime.run.team_id = %q, want team-a", got)
		}
	}
}

func TestEveryStepsMetricsArriveOnceWithTheirStep(t *testing.T) {
	c := otlptest.NewCollector(t, 0)
	if _, err := runDemo(t, c, "-episodes-per-step", "4"); err != nil {
		t.Fatal(err)
	}
	lossSteps := map[int64]int{}
	stepValues := []float64{}
	rewardCounts := map[int64]uint64{}
	envMeans := 0
	for _, p := range c.Points() {
		if p.Name == "step" {
			if len(p.Attrs) != 0 {
				t.Errorf("the step gauge has attributes %v, want none", p.Attrs)
			}
			stepValues = append(stepValues, p.Value)
			continue
		}
		step := intAttr(t, p.Attrs, "prime.step")
		switch p.Name {
		case "loss":
			lossSteps[step]++
		case "reward":
			rewardCounts[step] += p.Count
		case "reward/mean":
			if p.Attrs["env"].GetStringValue() != "" {
				envMeans++
			}
		}
	}
	for step := int64(1); step <= 6; step++ {
		if lossSteps[step] != 1 {
			t.Errorf("loss of step %d arrived %d times, want once", step, lossSteps[step])
		}
		if rewardCounts[step] != 4 {
			t.Errorf("the reward histogram of step %d counts %d episodes, want 4", step, rewardCounts[step])
		}
	}
	if !slices.Equal(stepValues, []float64{1, 2, 3, 4, 5, 6}) {
		t.Errorf("step gauge values = %v, want 1..6 in order", stepValues)
	}
	if envMeans == 0 {
		t.Error("no reward/mean point with an env attribute")
	}
}

func TestEpisodesCarryTheStepTheyWereDispatchedAt(t *testing.T) {
	c := otlptest.NewCollector(t, 0)
	if _, err := runDemo(t, c, "-episodes-per-step", "4", "-eval-every", "5"); err != nil {
		t.Fatal(err)
	}
	train, eval := map[int64]int{}, map[int64]int{}
	metricsEvents := 0
	for _, r := range c.Records() {
		attrs := otlptest.RecordAttrs(r)
		switch r.GetEventName() {
		case trainerlib.EventEpisode:
			step := intAttr(t, attrs, "prime.work.step")
			switch typ := attrs["prime.work.type"].GetStringValue(); typ {
			case "train":
				train[step]++
			case "eval":
				eval[step]++
			default:
				t.Errorf("prime.work.type = %q", typ)
			}
			keys := []string{}
			for _, kv := range r.GetBody().GetKvlistValue().GetValues() {
				keys = append(keys, kv.GetKey())
			}
			if !slices.Contains(keys, "trajectory") || !slices.Contains(keys, "reward") {
				t.Errorf("episode body keys %v lack trajectory or reward", keys)
			}
		case trainerlib.EventMetrics:
			metricsEvents++
			intAttr(t, attrs, "prime.step")
			if _, ok := attrs["grad_norm"]; !ok {
				t.Error("prime.metrics event without grad_norm")
			}
		}
	}
	// The last episode of steps 3 and 6 is a straggler dispatched a step
	// earlier.
	if want := map[int64]int{1: 4, 2: 5, 3: 3, 4: 4, 5: 5, 6: 3}; !maps.Equal(train, want) {
		t.Errorf("train episodes per dispatch step = %v, want %v", train, want)
	}
	if want := map[int64]int{5: 1}; !maps.Equal(eval, want) {
		t.Errorf("eval episodes per step = %v, want %v", eval, want)
	}
	if metricsEvents != 6 {
		t.Errorf("%d prime.metrics events, want one per step", metricsEvents)
	}
}

func TestTheRunEndEventComesLastWithItsStatus(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		wantStatus string // "" for no end event
		wantError  string
	}{
		{"completed", nil, "completed", ""},
		{"failed with a reason", []string{"-status", "failed", "-error", "OOM at step 4"}, "failed", "OOM at step 4"},
		{"cancelled without a reason", []string{"-status", "cancelled"}, "cancelled", "demotrainer: simulated cancelled run"},
		{"crashed", []string{"-status", "crashed", "-error", "segfault"}, "crashed", "segfault"},
		{"none: the trainer dies", []string{"-status", "none"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := otlptest.NewCollector(t, 0)
			if _, err := runDemo(t, c, append([]string{"-steps", "2"}, tc.args...)...); err != nil {
				t.Fatal(err)
			}
			records := c.Records()
			ends := 0
			for _, r := range records {
				if r.GetEventName() == trainerlib.EventRunEnd {
					ends++
				}
			}
			if tc.wantStatus == "" {
				if ends != 0 {
					t.Fatalf("%d prime.run.end events, want none", ends)
				}
				return
			}
			last := records[len(records)-1]
			if ends != 1 || last.GetEventName() != trainerlib.EventRunEnd {
				t.Fatalf("%d prime.run.end events and the last record is %q, want exactly one, last", ends, last.GetEventName())
			}
			otlptest.CheckRunEnd(t, last, tc.wantStatus, tc.wantError)
		})
	}
}

func TestTheSummaryLineCountsWhatWasSent(t *testing.T) {
	c := otlptest.NewCollector(t, 0)
	out, err := runDemo(t, c, "-run-key", "k", "-episodes-per-step", "2", "-eval-every", "3")
	if err != nil {
		t.Fatal(err)
	}
	// 6 steps × (loss, entropy, reward/mean, step, reward histogram) plus one
	// reward/mean per environment present; 6×2 + 2 eval episodes.
	points := len(c.Points())
	records := len(c.Records())
	for _, want := range []string{"run key k:", "6 steps", "14 episodes (2 eval)", "prime.run.end completed"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary %q lacks %q", out, want)
		}
	}
	for _, want := range []string{strconv.Itoa(points) + " metric points", strconv.Itoa(records) + " log records"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary %q lacks %q (what the collector received)", out, want)
		}
	}
	if strings.Count(out, "\n") != 1 {
		t.Errorf("summary %q is not one line", out)
	}
}

func TestTwoRunsWithOneSeedSendTheSameData(t *testing.T) {
	bodies := func(seed string) ([]otlptest.Point, []string) {
		c := otlptest.NewCollector(t, 0)
		if _, err := runDemo(t, c, "-seed", seed, "-steps", "3"); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range c.Records() {
			b, err := proto.Marshal(r.GetBody())
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r.GetEventName()+string(b))
		}
		var losses []otlptest.Point
		for _, p := range c.Points() {
			if p.Name == "loss" {
				losses = append(losses, otlptest.Point{Value: p.Value})
			}
		}
		return losses, out
	}
	lossA, bodyA := bodies("3")
	lossB, bodyB := bodies("3")
	lossC, bodyC := bodies("4")
	if !slices.Equal(bodyA, bodyB) || !slices.EqualFunc(lossA, lossB, func(a, b otlptest.Point) bool { return a.Value == b.Value }) {
		t.Fatal("two runs with seed 3 sent different data")
	}
	if slices.Equal(bodyA, bodyC) || slices.EqualFunc(lossA, lossC, func(a, b otlptest.Point) bool { return a.Value == b.Value }) {
		t.Fatal("seeds 3 and 4 sent the same data")
	}
}

func TestAFailedDeliveryFailsTheRunNamingTheStep(t *testing.T) {
	otlptest.CheckFailedDelivery(t, func(c *otlptest.Collector) (string, error) { return runDemo(t, c) }, "step 1")
}

func TestAnInterruptedRunEndsAsCancelled(t *testing.T) {
	c := otlptest.NewCollector(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg, err := parseConfig([]string{"-endpoint", c.URL, "-steps", "5", "-export-timeout", "2s"}, new(bytes.Buffer), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	tel, err := newTelemetry(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	in, err := newInstruments(tel.meters.Meter(instrumentationScope))
	if err != nil {
		t.Fatal(err)
	}
	tr := trainer{cfg: cfg, in: in, play: trainerlib.Play{
		Events: trainerlib.Events{Logger: tel.logs.Provider.Logger(instrumentationScope), Now: fixedNow},
		Flush:  tel.flush,
		// The interrupt arrives while waiting after step 2.
		Sleep: func(ctx context.Context, _ time.Duration) error {
			if len(otlptest.ByEvent(c.Records(), trainerlib.EventMetrics)) == 2 {
				cancel()
			}
			return ctx.Err()
		},
	}}
	out, err := tr.run(ctx)
	if shutErr := tel.shutdown(context.Background()); shutErr != nil {
		t.Fatal(shutErr)
	}
	if !errors.Is(err, context.Canceled) || out.steps != 2 || out.status != trainerlib.StatusCancelled {
		t.Fatalf("run = %+v, %v; want 2 steps, cancelled, context.Canceled", out, err)
	}
	records := c.Records()
	last := records[len(records)-1]
	if last.GetEventName() != trainerlib.EventRunEnd || otlptest.RecordAttrs(last)["prime.run.status"].GetStringValue() != trainerlib.StatusCancelled {
		t.Fatalf("last record %q %v, want prime.run.end cancelled", last.GetEventName(), otlptest.RecordAttrs(last))
	}
}

func fixedNow() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
