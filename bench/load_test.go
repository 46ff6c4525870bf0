package main

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
)

func TestAPlanSendsEveryEpisodeOnceOnCadenceInRequestsOfOneRunAndStep(t *testing.T) {
	spec := loadSpec{name: "t", episodes: 1234, perRequest: 64, perStep: 100, runs: 3}
	next := 0
	for _, r := range plan(spec) {
		if r.first != next {
			t.Fatalf("request starts at episode %d, want %d", r.first, next)
		}
		if r.count < 1 || r.count > spec.perRequest || r.step%10 != 0 || r.run >= spec.runs {
			t.Fatalf("request %+v", r)
		}
		next += r.count
	}
	if next != spec.episodes {
		t.Fatalf("planned %d episodes, want %d", next, spec.episodes)
	}
}

func TestALoadDecodesAsEpisodesOfAboutTheAskedSize(t *testing.T) {
	spec := loadSpec{name: "t", shape: plainShape(t), episodes: 40, episodeBytes: 2 << 10, perRequest: 16, perStep: 20, runs: 2}
	l, err := buildLoad(spec, 2)
	if err != nil {
		t.Fatal(err)
	}
	per := float64(l.bytes) / float64(spec.episodes)
	if per < 0.9*2048 || per > 1.1*2048 {
		t.Errorf("%.0f bytes per episode, want about 2048", per)
	}
	seen := map[string]bool{}
	records := 0
	for _, raw := range l.requests {
		req := plogotlp.NewExportRequest()
		if err := req.UnmarshalProto(raw); err != nil {
			t.Fatal(err)
		}
		rls := req.Logs().ResourceLogs()
		if rls.Len() != 1 {
			t.Fatalf("%d resources in one request, want 1", rls.Len())
		}
		if key, ok := rls.At(0).Resource().Attributes().Get("prime.run.key"); !ok || key.Str() == "" {
			t.Error("a resource without prime.run.key")
		}
		lrs := rls.At(0).ScopeLogs().At(0).LogRecords()
		for i := range lrs.Len() {
			lr := lrs.At(i)
			records++
			checkEpisode(t, lr)
			prompt, _ := lr.Body().Map().Get("prompt")
			if seen[prompt.Str()] {
				t.Error("two episodes with the same prompt")
			}
			seen[prompt.Str()] = true
		}
	}
	if records != spec.episodes {
		t.Errorf("%d records, want %d", records, spec.episodes)
	}
}

// checkEpisode asserts what the exporter needs of a prime.episode record.
func checkEpisode(t *testing.T, lr plog.LogRecord) {
	t.Helper()
	if lr.EventName() != "prime.episode" || lr.Timestamp() == 0 {
		t.Fatalf("event %q at %d", lr.EventName(), lr.Timestamp())
	}
	if step, ok := lr.Attributes().Get("prime.work.step"); !ok || step.Int()%10 != 0 {
		t.Fatalf("prime.work.step = %v", step.AsRaw())
	}
	traj, ok := lr.Body().Map().Get("trajectory")
	if !ok || traj.Slice().Len() == 0 {
		t.Fatal("no trajectory")
	}
	last := traj.Slice().At(traj.Slice().Len() - 1).Map()
	if msgs, ok := last.Get("messages"); !ok || msgs.Slice().Len() == 0 {
		t.Fatal("the last branch has no messages")
	}
}
