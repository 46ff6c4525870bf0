package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// trainRun writes <root>/<id> as offline mode does: run.json with name and
// config, and metrics.jsonl.
func trainRun(t *testing.T, root, id, name, config, created, metrics string) string {
	t.Helper()
	dir := filepath.Join(root, id)
	if config == "" {
		config = "{}"
	}
	writeFile(t, filepath.Join(dir, "run.json"), fmt.Sprintf(`{"id":%q,"spec":{"name":%q,"base_model":"Qwen/Qwen3-0.6B","max_steps":3,"environments":[{"id":"primeintellect/gsm8k"}],"team_id":"","run_config":%s},"status":"completed","created_at":%q,"updated_at":%q}`,
		id, name, config, created, created))
	if metrics != "" {
		writeFile(t, filepath.Join(dir, "metrics.jsonl"), metrics)
	}
	return dir
}

func compareOf(t *testing.T, paths ...string) *Comparison {
	t.Helper()
	sel, err := SelectRuns(paths, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compare(sel)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func metric(c *Comparison, name, axis string) *MetricRow {
	for _, m := range c.Metrics {
		if m.Name == name && m.Axis == axis {
			return m
		}
	}
	return nil
}

const day = "2026-12-04T10:00:00Z"

func TestAMetricThatARunLacksIsOneChartThatNamesTheRun(t *testing.T) {
	root := t.TempDir()
	trainRun(t, root, "offline-a", "a", "", day, `{"metrics":{"step":1,"loss":1,"kl":0.1}}`+"\n")
	trainRun(t, root, "offline-b", "b", "", day, `{"metrics":{"step":1,"loss":2}}`+"\n")
	trainRun(t, root, "offline-c", "c", "", day, `{"metrics":{"step":1,"loss":3}}`+"\n")
	c := compareOf(t, root)
	if len(c.Metrics) != 2 {
		t.Fatalf("%d charts, want loss and kl", len(c.Metrics))
	}
	kl, loss := metric(c, "kl", AxisStep), metric(c, "loss", AxisStep)
	if len(kl.Series) != 1 || kl.Series[0].Run != 0 || !slices.Equal(kl.Missing, []int{1, 2}) {
		t.Fatalf("kl: series %+v, missing %v; want run a's, b and c named missing", kl.Series, kl.Missing)
	}
	if len(loss.Series) != 3 || len(loss.Missing) != 0 {
		t.Fatalf("loss: %d series, missing %v", len(loss.Series), loss.Missing)
	}
	var page bytes.Buffer
	if err := RenderCompare(&page, c); err != nil {
		t.Fatal(err)
	}
	data := embedded(t, page.String())
	if data.Charts[0].Name != "kl" || !slices.Equal(data.Charts[0].Missing, []int{1, 2}) || !slices.Equal(data.Runs, []string{"a", "b", "c"}) {
		t.Fatalf("the page's kl chart %+v, runs %v", data.Charts[0], data.Runs)
	}
}

func TestStepsAlignOnTheStepAndTimeKeyedRowsOnTheTimeSinceEachRunsStart(t *testing.T) {
	root := t.TempDir()
	// Run b started a day after a; both post a time-keyed row 30 s in.
	trainRun(t, root, "offline-a", "a", "", day, `{"metrics":{"step":1,"_timestamp":1000,"loss":1}}
{"metrics":{"_timestamp":1030,"throughput":5}}
`)
	trainRun(t, root, "offline-b", "b", "", day, `{"metrics":{"step":1,"_timestamp":87400,"loss":2}}
{"metrics":{"_timestamp":87430,"throughput":6}}
`)
	c := compareOf(t, root)
	tp := metric(c, "throughput", AxisTime)
	if tp == nil || len(tp.Series) != 2 || !slices.Equal(tp.Series[0].X, []float64{30}) || !slices.Equal(tp.Series[1].X, []float64{30}) {
		t.Fatalf("throughput: %+v; want both runs at 30 s", tp)
	}
	loss := metric(c, "loss", AxisStep)
	if !slices.Equal(loss.Series[0].X, []float64{1}) || !slices.Equal(loss.Series[1].X, []float64{1}) {
		t.Fatalf("loss: %+v; want both at step 1", loss.Series)
	}
}

func TestEachRunIsThinnedApartSoThatASpikeOfAnyRunStays(t *testing.T) {
	root := t.TempDir()
	for i, id := range []string{"offline-a", "offline-b"} {
		var b strings.Builder
		for step := 1; step <= 5000; step++ {
			v := 0.0
			if step == 1234+i*2000 {
				v = 100 // run a's spike at 1234, run b's at 3234
			}
			fmt.Fprintf(&b, `{"metrics":{"step":%d,"loss":%g}}`+"\n", step, v)
		}
		trainRun(t, root, id, id, "", day, b.String())
	}
	c := compareOf(t, root)
	for _, s := range metric(c, "loss", AxisStep).Series {
		if s.Points != 5000 || len(s.Y) > MaxPoints || slices.Max(s.Y) != 100 {
			t.Errorf("run %d: %d points, %d plotted, max %v; want 5000, at most %d, the spike kept", s.Run, s.Points, len(s.Y), slices.Max(s.Y), MaxPoints)
		}
	}
}

func TestADamagedMetricsLineIsSaidOnThePageByRunAndLine(t *testing.T) {
	root := t.TempDir()
	trainRun(t, root, "offline-a", "a", "", day, `{"metrics":{"step":1,"loss":1}}`+"\n")
	trainRun(t, root, "offline-b", "b", "", day, `{"metrics":{"step":1,"loss":2}}
{"metrics":{"step":2,"lo
{"metrics":{"step":3,"loss":2}}
`)
	c := compareOf(t, root)
	if c.Runs[1].BadLines != 1 || !slices.Equal(c.Runs[1].BadLineNos, []int{2}) || c.Runs[0].BadLines != 0 {
		t.Fatalf("bad lines: a %d, b %d %v", c.Runs[0].BadLines, c.Runs[1].BadLines, c.Runs[1].BadLineNos)
	}
	if got := metric(c, "loss", AxisStep).Series[1].Points; got != 2 {
		t.Fatalf("run b's loss has %d points, want the 2 good lines'", got)
	}
	var page bytes.Buffer
	if err := RenderCompare(&page, c); err != nil {
		t.Fatal(err)
	}
	want := `<p class="warn bad-lines" data-run="1" data-lines="1">b (<code>` + filepath.Join(root, "offline-b") + `</code>): metrics.jsonl line 2 is not a metrics post`
	if !strings.Contains(page.String(), want) {
		t.Fatalf("the page does not say which line of which run:\n%s", page.String()[:min(page.Len(), 3000)])
	}
}

func TestTheLinesOfAMetricsFileFullOfDamageAreNamedUpToTenAndCounted(t *testing.T) {
	if got := badLinesText(12, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}); !strings.HasPrefix(got, "metrics.jsonl lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 2 more are not metrics posts") {
		t.Fatal(got)
	}
}

func TestADirectoryThatIsNotARunIsRefusedAndARunWhoseRecordIsDamagedIsSkippedAndNamed(t *testing.T) {
	empty := t.TempDir()
	writeFile(t, filepath.Join(empty, "notes", "todo.txt"), "x")
	if _, err := SelectRuns([]string{empty}, Filter{}); err == nil || !strings.Contains(err.Error(), "holds no run.json or evaluation.json and no run directories") {
		t.Fatalf("a directory of no runs: %v", err)
	}
	root := t.TempDir()
	trainRun(t, root, "offline-a", "a", "", day, "")
	trainRun(t, root, "offline-b", "b", "", day, "")
	writeFile(t, filepath.Join(root, "offline-c", "run.json"), `{"id":"offline-c",`)
	c := compareOf(t, root)
	if len(c.Runs) != 2 || len(c.Skipped) != 1 || c.Skipped[0].Dir != filepath.Join(root, "offline-c") || !strings.Contains(c.Skipped[0].Reason, "run.json") {
		t.Fatalf("runs %d, skipped %+v; want a and b compared and offline-c named", len(c.Runs), c.Skipped)
	}
	var page bytes.Buffer
	if err := RenderCompare(&page, c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), `<li data-dir="`+filepath.Join(root, "offline-c")+`">`) {
		t.Fatal("the page does not name the run it skipped")
	}
	// Alone with a broken run, a run has nothing to be compared with.
	if _, err := SelectRuns([]string{filepath.Join(root, "offline-a"), filepath.Join(root, "offline-c")}, Filter{}); !errors.Is(err, ErrTooFew) ||
		!strings.Contains(err.Error(), "offline-c") {
		t.Fatalf("one good run and a broken one: %v", err)
	}
}

func TestRunsOfTwoKindsAreRefusedNamingWhichIsWhichAndTheFlagThatPicksOne(t *testing.T) {
	root := t.TempDir()
	trainRun(t, root, "offline-a", "a", "", day, "")
	trainRun(t, root, "offline-b", "b", "", day, "")
	writeFile(t, filepath.Join(root, "offline-eval-1", "evaluation.json"), `{"id":"offline-eval-1","kind":"eval","status":"completed","created_at":"`+day+`","updated_at":"`+day+`"}`)
	_, err := SelectRuns([]string{root}, Filter{})
	if err == nil || !strings.Contains(err.Error(), "training runs "+filepath.Join(root, "offline-a")+", "+filepath.Join(root, "offline-b")+"; evaluations "+filepath.Join(root, "offline-eval-1")) ||
		!strings.Contains(err.Error(), "-kind train or -kind eval") {
		t.Fatalf("mixed kinds: %v", err)
	}
	sel, err := SelectRuns([]string{root}, Filter{Kind: KindTrain})
	if err != nil || len(sel.Runs) != 2 || sel.Kind != KindTrain {
		t.Fatalf("-kind train: %+v, %v", sel, err)
	}
}

func TestTheFilterKeepsRunsByNameIDOrDirectoryKindAndCreationDate(t *testing.T) {
	root := t.TempDir()
	trainRun(t, root, "offline-1", "sweep-lr-1", "", "2026-12-01T10:00:00Z", "")
	trainRun(t, root, "offline-2", "sweep-lr-2", "", "2026-12-02T23:59:59Z", "")
	trainRun(t, root, "offline-3", "baseline", "", "2026-12-03T00:00:00Z", "")
	dirs := func(f Filter) []string {
		t.Helper()
		sel, err := SelectRuns([]string{root}, f)
		if errors.Is(err, ErrTooFew) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range sel.Runs {
			out = append(out, filepath.Base(r.Dir))
		}
		return out
	}
	dec2 := mustTime(t, "2026-12-02T00:00:00Z")
	dec3 := mustTime(t, "2026-12-03T00:00:00Z")
	for name, tt := range map[string]struct {
		f    Filter
		want []string
	}{
		"a glob on the name":               {Filter{Name: "sweep-*"}, []string{"offline-1", "offline-2"}},
		"a glob on the id":                 {Filter{Name: "offline-[13]"}, []string{"offline-1", "offline-3"}},
		"since a day":                      {Filter{Since: dec2}, []string{"offline-2", "offline-3"}},
		"until a day, which it leaves out": {Filter{Until: dec3}, []string{"offline-1", "offline-2"}},
		"no run matches":                   {Filter{Name: "nothing*"}, nil},
	} {
		if got := dirs(tt.f); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", name, got, tt.want)
		}
	}
	if err := (Filter{Name: "["}).Valid(); err == nil || !strings.Contains(err.Error(), "-name") {
		t.Errorf("a bad glob: %v", err)
	}
	if err := (Filter{Kind: "training"}).Valid(); err == nil || !strings.Contains(err.Error(), "-kind") {
		t.Errorf("a bad kind: %v", err)
	}
}

func TestThePageIsNeverWrittenOverAFile(t *testing.T) {
	root := t.TempDir()
	trainRun(t, root, "offline-a", "a", "", day, `{"metrics":{"step":1,"loss":1}}`+"\n")
	trainRun(t, root, "offline-b", "b", "", day, `{"metrics":{"step":1,"loss":2}}`+"\n")
	c := compareOf(t, root)
	out := filepath.Join(t.TempDir(), "compare.html")
	if err := WriteCompare(c, out); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(out); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the page: %v, %v; want owner-only", info, err)
	}
	writeFile(t, out, "my notes")
	err := WriteCompare(c, out)
	if !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "never writes over a file") {
		t.Fatalf("writing over a file: %v", err)
	}
	if raw, _ := os.ReadFile(out); string(raw) != "my notes" {
		t.Fatalf("the file was written over: %q", raw)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".compare.html.*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestRunTextCannotEndTheComparePagesScriptOrMarkup(t *testing.T) {
	root := t.TempDir()
	name := strings.ReplaceAll(hostile, `"`, `\"`)
	trainRun(t, root, "offline-a", hostile[:9], `{"note":"`+name+`"}`, day, `{"metrics":{"step":1,"`+name+`":1}}`+"\n")
	trainRun(t, root, "offline-b", "b", `{"note":"x"}`, day, `{"metrics":{"step":1,"`+name+`":2}}`+"\n")
	c := compareOf(t, root)
	var page bytes.Buffer
	if err := RenderCompare(&page, c); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page.String(), "<script>alert(1)") {
		t.Fatal("run text reached the page as markup")
	}
	if data := embedded(t, page.String()); len(data.Charts) != 1 || data.Charts[0].Name != hostile {
		t.Fatalf("charts %+v", data.Charts)
	}
}

func TestEvaluationsAreComparedByConfigSummaryAndSamplesMatchedByPrompt(t *testing.T) {
	root := t.TempDir()
	for i, id := range []string{"offline-eval-1", "offline-eval-2"} {
		writeFile(t, filepath.Join(root, id, "evaluation.json"), fmt.Sprintf(`{"id":%q,"kind":"eval","status":"completed","created_at":%q,"updated_at":%q,
			"spec":{"name":%q,"environments":[{"id":"gsm8k"}],"model_name":"m","dataset":"gsm8k","tags":[],"metadata":{"temperature":0.%d}},
			"summary":{"avg_reward":0.5,"avg_metrics":{"judge":0.%d}}}`, id, day, day, id, 5+i, 7+i))
		writeFile(t, filepath.Join(root, id, "samples.jsonl"), fmt.Sprintf(`{"sample_id":"s1","task":"gsm8k","prompt":"Q1","completion":"A%d","reward":1}
{"sample_id":"s2","task":"gsm8k","prompt":"Q%d","completion":"B","reward":0}
`, i, 2+i))
	}
	c := compareOf(t, root)
	if c.Kind != KindEval || !slices.Equal(keysOf(c.Config, true), []string{"temperature"}) || !slices.Equal(keysOf(c.Summary, true), []string{"avg_metrics.judge"}) {
		t.Fatalf("kind %s, config differs in %v, summary in %v", c.Kind, keysOf(c.Config, true), keysOf(c.Summary, true))
	}
	if len(c.Steps) != 1 || c.Steps[0].Step != EvalStep || len(c.Steps[0].Prompts) != 3 ||
		!slices.EqualFunc(ids(c.Steps[0].Prompts[0]), [][]string{{"s1"}, {"s1"}}, slices.Equal) {
		t.Fatalf("samples %+v", c.Steps)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// embedded is the compare page's data.
func embedded(t *testing.T, page string) compareData {
	t.Helper()
	_, rest, _ := strings.Cut(page, `<script type="application/json" id="compare-data">`)
	body, _, _ := strings.Cut(rest, "</script>")
	var data compareData
	if err := json.Unmarshal([]byte(body), &data); err != nil {
		t.Fatalf("embedded data: %v", err)
	}
	return data
}

func TestTheRunsOfADirectoryComeInTheOrderTheyWereCreatedAndNamedPathsInTheOrderGiven(t *testing.T) {
	root := t.TempDir()
	trainRun(t, root, "offline-a", "late", "", "2026-12-03T00:00:00Z", "")
	trainRun(t, root, "offline-b", "early", "", "2026-12-01T00:00:00Z", "")
	base := trainRun(t, t.TempDir(), "offline-z", "baseline", "", "2026-12-05T00:00:00Z", "")
	sel, err := SelectRuns([]string{base, root, filepath.Join(root, "offline-a")}, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range sel.Runs {
		got = append(got, r.head.Title)
	}
	if !slices.Equal(got, []string{"baseline", "early", "late"}) || sel.Found != 3 {
		t.Fatalf("runs %v of %d found; want the baseline first, then early and late, each once", got, sel.Found)
	}
}
