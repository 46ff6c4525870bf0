package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/primeintellect/primeexporter/cmd/internal/trainerlib"
)

// fixturePath is the verifiers episode fixture the exporter's projection is
// tested with (episodes-native.md).
const fixturePath = "../../internal/sampletable/testdata/verifiers-episode/episode.json"

func noEnv(string) string { return "" }

func testConfig(t *testing.T, args ...string) config {
	t.Helper()
	cfg, err := parseConfig(args, new(bytes.Buffer), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func loadFixture(t *testing.T) object {
	t.Helper()
	raw, err := os.ReadFile(fixturePath)
	if err != nil {
		t.Fatal(err)
	}
	return parseJSON(t, raw).(object)
}

// kind is a JSON value's kind, ints apart from floats.
func kind(v any) string {
	switch v.(type) {
	case object:
		return "object"
	case []any:
		return "list"
	case nil:
		return "null"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// A document differs from the fixture (a train episode) only here.
var (
	// freeForm are dicts whose keys are the producer's: not compared.
	freeForm = []string{"traces[].agent.config", "traces[].info"}
	// notInEval are keys an eval episode does not have: no run.work (the
	// eval CLI stamps none) and no advantages (nothing is trained).
	notInEval = []string{"run.work", "traces[].nodes[].advantages"}
)

// compareShape walks want (the fixture) and got side by side and reports
// every object whose keys differ in set or order, every list of another
// length and every value of another kind. A null in the fixture (a metric
// with no value) matches any value.
func compareShape(path string, want, got any, report func(string, ...any)) {
	if slices.Contains(freeForm, path) || want == nil {
		return
	}
	if kind(want) != kind(got) {
		report("%s: a %s, the fixture has a %s", path, kind(got), kind(want))
		return
	}
	switch want := want.(type) {
	case object:
		got := got.(object)
		var wantKeys, gotKeys []string
		for _, m := range want {
			if !slices.Contains(notInEval, join(path, m.key)) {
				wantKeys = append(wantKeys, m.key)
			}
		}
		for _, m := range got {
			gotKeys = append(gotKeys, m.key)
		}
		if !slices.Equal(gotKeys, wantKeys) {
			report("%s: keys %v, the fixture's are %v", orRoot(path), gotKeys, wantKeys)
			return
		}
		for _, k := range wantKeys {
			compareShape(join(path, k), want.get(k), got.get(k), report)
		}
	case []any:
		got := got.([]any)
		if len(got) != len(want) {
			report("%s: %d items, the fixture has %d", path, len(got), len(want))
			return
		}
		for i := range want {
			compareShape(path+"[]", want[i], got[i], report)
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orRoot(path string) string {
	if path == "" {
		return "the episode"
	}
	return path
}

func TestADocumentHasTheFixturesShapeAtEveryLevel(t *testing.T) {
	fixture := loadFixture(t)
	ev := planEvaluation(testConfig(t, "-name", "my-eval", "-error-rate", "0"))
	for _, tc := range []struct {
		name string
		i    int
	}{
		{"the first episode", 0},
		{"a second rollout", 1},
		{"another example", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			compareShape("", fixture, ev.document(tc.i), t.Errorf)
		})
	}
}

func TestTheShapeCheckCatchesAMovedKey(t *testing.T) {
	fixture := loadFixture(t)
	doc := planEvaluation(testConfig(t, "-name", "n", "-error-rate", "0")).document(0)
	doc[0], doc[1] = doc[1], doc[0] // env before id
	var found []string
	compareShape("", fixture, doc, func(f string, args ...any) { found = append(found, fmt.Sprintf(f, args...)) })
	if len(found) != 1 || !strings.Contains(found[0], "the episode: keys [env id") {
		t.Fatalf("reports %q, want one naming the episode's keys", found)
	}
}

func TestAnEvalDocumentIsStampedAsTheRunnersEval(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"with a name", []string{"-name", "gsm8k-nightly"}, []string{"type", "id", "name"}},
		{"without a name", nil, []string{"type", "id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := planEvaluation(testConfig(t, tc.args...))
			run := ev.document(0).get("run").(object)
			var keys []string
			for _, m := range run {
				keys = append(keys, m.key)
			}
			if !slices.Equal(keys, tc.want) || run.get("type") != "eval" || run.get("id") != ev.runnerID {
				t.Fatalf("run = %#v, want type eval, id %s, keys %v", run, ev.runnerID, tc.want)
			}
		})
	}
}

func TestAFailedEpisodeHasAnErrorAndNoReward(t *testing.T) {
	ev := planEvaluation(testConfig(t, "-error-rate", "1", "-episodes", "2"))
	for _, tc := range []struct {
		name string
		path []string
		want any
	}{
		{"the episode is not ok", []string{"ok"}, false},
		{"the trace is not ok", []string{"traces", "0", "ok"}, false},
		{"the reward is null", []string{"traces", "0", "rewards", "correct_answer"}, nil},
		{"the judge's metric is null", []string{"traces", "0", "metrics", "judge_latency"}, nil},
		{"the episode's error is named", []string{"errors", "0", "type"}, failureType},
		{"the trace carries the same error", []string{"traces", "0", "errors", "0", "message"}, failureMessage},
		{"the error has a status code", []string{"errors", "0", "status_code"}, failureStatus},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lookup(t, ev.document(0), tc.path...); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("%v = %#v, want %#v", tc.path, got, tc.want)
			}
		})
	}
	if r := ev.episodes[0].reward(); r != 0 {
		t.Errorf("a failed episode's reward is %v, want 0", r)
	}
}

func TestAnEpisodeThatSucceededHasAScoredReward(t *testing.T) {
	ev := planEvaluation(testConfig(t, "-error-rate", "0", "-episodes", "20"))
	correct := 0
	for i, e := range ev.episodes {
		doc := ev.document(i)
		score := lookup(t, doc, "traces", "0", "rewards", "correct_answer", "score")
		if want := map[bool]float64{true: 1, false: 0}[e.correct]; score != want || e.reward() != want {
			t.Errorf("episode %d: score %v, reward %v, want %v", i, score, e.reward(), want)
		}
		if errs := lookup(t, doc, "errors"); !reflect.DeepEqual(errs, []any{}) {
			t.Errorf("episode %d: errors %v, want none", i, errs)
		}
		if e.correct {
			correct++
		}
	}
	if correct == 0 || correct == len(ev.episodes) {
		t.Errorf("%d of %d episodes are correct, want a mix", correct, len(ev.episodes))
	}
}

// lookup follows keys (and list indices) into a document.
func lookup(t *testing.T, v any, path ...string) any {
	t.Helper()
	for _, p := range path {
		switch x := v.(type) {
		case object:
			v = x.get(p)
		case []any:
			var i int
			if _, err := fmt.Sscan(p, &i); err != nil || i >= len(x) {
				t.Fatalf("no item %s in a list of %d", p, len(x))
			}
			v = x[i]
		default:
			t.Fatalf("%v: %s is not in a %T", path, p, v)
		}
	}
	return v
}

func TestTheTraceForksIntoTwoBranches(t *testing.T) {
	doc := planEvaluation(testConfig(t)).document(0)
	nodes := lookup(t, doc, "traces", "0", "nodes").([]any)
	parents := map[int]bool{}
	for _, n := range nodes {
		if p, ok := n.(object).get("parent").(int); ok {
			parents[p] = true
		}
	}
	var leaves []int
	for i := range nodes {
		if !parents[i] {
			leaves = append(leaves, i)
		}
	}
	if !slices.Equal(leaves, []int{2, 4}) {
		t.Fatalf("leaves %v, want the two answers 2 and 4", leaves)
	}
	var callNodes []int
	for _, c := range lookup(t, doc, "traces", "0", "calls").([]any) {
		callNodes = append(callNodes, c.(object).get("node").(int))
	}
	if !slices.Equal(callNodes, []int{2, 4}) {
		t.Fatalf("calls name nodes %v, want 2 and 4", callNodes)
	}
}

// contentBytes sums the trace's message contents.
func contentBytes(t *testing.T, doc object) int {
	t.Helper()
	n := 0
	for _, node := range lookup(t, doc, "traces", "0", "nodes").([]any) {
		n += len(node.(object).get("message").(object).get("content").(string))
	}
	return n
}

func TestEpisodeBytesSetsTheMessageContent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bytes int
	}{
		{"the default", 2000},
		{"an odd size", 4321},
		{"a megabyte", 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := planEvaluation(testConfig(t, "-episode-bytes", fmt.Sprint(tc.bytes)))
			doc := ev.document(3)
			if got := contentBytes(t, doc); got != tc.bytes {
				t.Fatalf("message content is %d bytes, want %d", got, tc.bytes)
			}
			if size := len(jsonText(doc)); size < tc.bytes || size > tc.bytes+6000 {
				t.Fatalf("the document is %d bytes of JSON, want a little over %d", size, tc.bytes)
			}
			answer := lookup(t, doc, "traces", "0", "nodes", "2", "message", "content").(string)
			if want := fmt.Sprint(" ", ev.episodes[3].given); !strings.HasSuffix(answer, want) {
				t.Fatalf("the padded answer ends %q, want the answer %q", answer[max(0, len(answer)-20):], want)
			}
		})
	}
	ev := planEvaluation(testConfig(t, "-episode-bytes", "0"))
	if got := contentBytes(t, ev.document(0)); got == 0 || got > 200 {
		t.Fatalf("with -episode-bytes 0 the content is %d bytes, want the fixed messages alone", got)
	}
}

func TestTheRolloutsOfAnExampleShareItsTaskAndEnvironment(t *testing.T) {
	cfg := testConfig(t, "-episodes", "7", "-rollouts-per-example", "3", "-environments", "primeintellect/gsm8k,math-python@v2")
	ev := planEvaluation(cfg)
	var got []string
	for i, e := range ev.episodes {
		doc := ev.document(i)
		idx := lookup(t, doc, "task", "data", "idx")
		if idx != e.example || lookup(t, doc, "traces", "0", "task", "data", "idx") != e.example {
			t.Errorf("episode %d: task.data.idx %v, want %d", i, idx, e.example)
		}
		got = append(got, fmt.Sprintf("%d/%d %s %s", e.example, e.rollout, lookup(t, doc, "env", "id"), lookup(t, doc, "env", "name")))
	}
	want := []string{
		"0/0 primeintellect/gsm8k gsm8k", "0/1 primeintellect/gsm8k gsm8k", "0/2 primeintellect/gsm8k gsm8k",
		"1/0 math-python math-python", "1/1 math-python math-python", "1/2 math-python math-python",
		"2/0 primeintellect/gsm8k gsm8k",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("examples, rollouts and environments:\n%q\nwant\n%q", got, want)
	}
	first, second := ev.document(0), ev.document(1)
	if !reflect.DeepEqual(first.get("task"), second.get("task")) || !reflect.DeepEqual(first.get("group"), second.get("group")) {
		t.Error("two rollouts of one example have different tasks or groups")
	}
	if reflect.DeepEqual(first.get("group"), ev.document(3).get("group")) {
		t.Error("two examples share a group")
	}
}

func TestEveryEpisodeAndTraceHasItsOwnID(t *testing.T) {
	ev := planEvaluation(testConfig(t, "-episodes", "200"))
	seen := map[string]bool{}
	for _, e := range ev.episodes {
		for _, id := range []string{e.id, e.traceID} {
			if seen[id] || len(id) != 32 {
				t.Fatalf("id %q is repeated or not 32 hex digits", id)
			}
			seen[id] = true
		}
	}
	other := planEvaluation(testConfig(t, "-episodes", "200", "-run-key", "another"))
	if other.episodes[0].id == ev.episodes[0].id || other.runnerID == ev.runnerID {
		t.Fatal("two evaluations share an episode id or a runner id")
	}
	if other.episodes[0].correct != ev.episodes[0].correct || other.episodes[0].a != ev.episodes[0].a {
		t.Fatal("the outcomes depend on the identity, want the seed alone")
	}
}

func TestTheErrorRateFailsThatShareOfEpisodes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		episodes int
		rate     string
		want     int
	}{
		{"the default share", 50, "0.1", 5},
		{"none", 50, "0", 0},
		{"all", 7, "1", 7},
		{"rounded", 7, "0.25", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := planEvaluation(testConfig(t, "-episodes", fmt.Sprint(tc.episodes), "-error-rate", tc.rate))
			failed := 0
			for _, e := range ev.episodes {
				if !e.ok {
					failed++
				}
			}
			if len(ev.episodes) != tc.episodes || failed != tc.want {
				t.Fatalf("%d episodes, %d failed; want %d, %d", len(ev.episodes), failed, tc.episodes, tc.want)
			}
		})
	}
}

func TestTheSameConfigAlwaysGivesTheSameDocuments(t *testing.T) {
	a := planEvaluation(testConfig(t))
	b := planEvaluation(testConfig(t))
	c := planEvaluation(testConfig(t, "-seed", "2"))
	for i := range a.episodes {
		if !bytes.Equal(jsonText(a.document(i)), jsonText(b.document(i))) {
			t.Fatalf("episode %d differs between two plans of one config", i)
		}
	}
	if bytes.Equal(jsonText(a.document(0)), jsonText(c.document(0))) {
		t.Fatal("another seed gave the same document")
	}
}

func TestTheUserSummaryHasAnAvgMetricsName(t *testing.T) {
	ev := planEvaluation(testConfig(t, "-episodes", "10", "-error-rate", "0.2"))
	s := userSummary(ev.episodes)
	names := []string{}
	for _, v := range s {
		names = append(names, v.name)
	}
	if !slices.Equal(names, []string{"num_examples", "accuracy", "avg_metrics/judge_latency"}) {
		t.Fatalf("summary keys %v", names)
	}
	correct, latency := 0, 0.0
	for _, e := range ev.episodes {
		if e.ok {
			latency += e.judgeLatency
			if e.correct {
				correct++
			}
		}
	}
	if s[0].value != 5 || s[1].value != trainerlib.RoundTo(float64(correct)/10, 6) || math.Abs(s[2].value.(float64)-latency/8) > 1e-6 {
		t.Fatalf("summary %v; want 5 examples, accuracy %v, latency %v", s, float64(correct)/10, latency/8)
	}
	if got := userSummary(nil); len(got) != 1 || got[0].value != 0 {
		t.Fatalf("summary of no episodes = %v, want num_examples 0 alone", got)
	}
}
