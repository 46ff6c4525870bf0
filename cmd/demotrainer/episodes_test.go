package main

import (
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
)

func testSpec() episodeSpec {
	return episodeSpec{
		seed: 7, dispatchStep: 3, index: 1, problemID: 5,
		env: "primeintellect/vf-math@v3", textBytes: 2000, turns: 1,
		correct: true, formatted: true, reward: 1, advantage: 0.5,
	}
}

func bodyMap(t *testing.T, v attribute.Value) map[string]attribute.Value {
	t.Helper()
	if v.Type() != attribute.MAP {
		t.Fatalf("body is a %s, want a map", v.Type())
	}
	m := map[string]attribute.Value{}
	for _, kv := range v.AsMap() {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

func TestAnEpisodeBodyHasExactlyTheSampleTableColumns(t *testing.T) {
	body := bodyMap(t, episodeBody(testSpec()))
	want := []string{"advantage", "answer", "completion", "env_name", "info", "metrics", "problem_id", "prompt", "reward", "tag", "task", "timing", "trajectory"}
	got := slices.Sorted(func(yield func(string) bool) {
		for k := range body {
			if !yield(k) {
				return
			}
		}
	})
	if !slices.Equal(got, want) {
		t.Fatalf("body keys = %v, want %v", got, want)
	}
	types := map[string]attribute.Type{
		"tag": attribute.STRING, "problem_id": attribute.INT64, "prompt": attribute.STRING,
		"completion": attribute.SLICE, "trajectory": attribute.SLICE, "answer": attribute.STRING,
		"env_name": attribute.STRING, "task": attribute.STRING, "info": attribute.MAP,
		"reward": attribute.FLOAT64, "advantage": attribute.FLOAT64, "metrics": attribute.MAP, "timing": attribute.MAP,
	}
	for k, typ := range types {
		if body[k].Type() != typ {
			t.Errorf("%s is a %s, want %s", k, body[k].Type(), typ)
		}
	}
	if got := body["env_name"].AsString(); got != "primeintellect/vf-math" {
		t.Errorf("env_name = %q, want the slug without its version pin", got)
	}
	if got := body["reward"].AsFloat64(); got != 1 {
		t.Errorf("reward = %v, want 1", got)
	}
}

func TestTheSameSpecAlwaysGivesTheSameBodyAndAnotherSeedAnother(t *testing.T) {
	a, b := episodeBody(testSpec()).Emit(), episodeBody(testSpec()).Emit()
	if a != b {
		t.Fatal("two bodies of one spec differ")
	}
	other := testSpec()
	other.seed++
	if episodeBody(other).Emit() == a {
		t.Fatal("another seed gave the same body")
	}
}

// chatText sums the message contents of the body's last trajectory branch.
func chatText(t *testing.T, body map[string]attribute.Value) (int, []attribute.Value) {
	t.Helper()
	branches := body["trajectory"].AsSlice()
	if len(branches) == 0 {
		t.Fatal("no trajectory branches")
	}
	last := bodyMap(t, branches[len(branches)-1])
	msgs := last["messages"].AsSlice()
	n := 0
	for _, m := range msgs {
		n += len(bodyMap(t, m)["content"].AsString())
	}
	return n, msgs
}

func TestTheChatTextHasTheRequestedSize(t *testing.T) {
	for _, tc := range []struct {
		name      string
		textBytes int
		turns     int
	}{
		{"default size, one turn", 2000, 1},
		{"default size, tool turn", 2000, 2},
		{"large", 20000, 1},
		{"odd size, tool turn", 4321, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := testSpec()
			spec.textBytes, spec.turns = tc.textBytes, tc.turns
			body := bodyMap(t, episodeBody(spec))
			if n, _ := chatText(t, body); n != tc.textBytes {
				t.Fatalf("chat text is %d bytes, want %d", n, tc.textBytes)
			}
			if got := len(body["trajectory"].AsSlice()); got != tc.turns {
				t.Fatalf("%d trajectory branches, want one per turn (%d)", got, tc.turns)
			}
		})
	}
}

func TestATinyTextSizeKeepsTheFixedConversation(t *testing.T) {
	spec := testSpec()
	spec.textBytes = 0
	body := bodyMap(t, episodeBody(spec))
	n, msgs := chatText(t, body)
	if n == 0 || len(msgs) != 3 {
		t.Fatalf("got %d messages of %d bytes, want system, user and assistant with their fixed text", len(msgs), n)
	}
}

func TestTheCompletionIsTheLastBranchAfterThePrompt(t *testing.T) {
	spec := testSpec()
	spec.turns = 2
	body := bodyMap(t, episodeBody(spec))
	_, msgs := chatText(t, body)
	completion := body["completion"].AsSlice()
	if len(completion) != len(msgs)-2 {
		t.Fatalf("completion has %d messages, want %d", len(completion), len(msgs)-2)
	}
	for i, m := range completion {
		if m.Emit() != msgs[i+2].Emit() {
			t.Errorf("completion[%d] = %s, want %s", i, m.Emit(), msgs[i+2].Emit())
		}
	}
	if got := bodyMap(t, msgs[1])["content"].AsString(); got != body["prompt"].AsString() {
		t.Errorf("prompt %q is not the user message %q", body["prompt"].AsString(), got)
	}
}

func TestTheFinalAnswerIsRightOnlyForACorrectEpisode(t *testing.T) {
	for _, correct := range []bool{true, false} {
		spec := testSpec()
		spec.correct = correct
		body := bodyMap(t, episodeBody(spec))
		completion := body["completion"].AsSlice()
		last := bodyMap(t, completion[len(completion)-1])["content"].AsString()
		boxed := `\boxed{` + body["answer"].AsString() + `}`
		if strings.HasSuffix(last, boxed+".") != correct {
			t.Errorf("correct=%v but the completion ends %q (answer %s)", correct, last[max(0, len(last)-30):], boxed)
		}
	}
}

func TestRolloutsOfOneProblemAndRunsOfAnotherSeedAskTheSameQuestionAndAnotherProblemAnother(t *testing.T) {
	prompt := func(s episodeSpec) string { return bodyMap(t, episodeBody(s))["prompt"].AsString() }
	base := testSpec()
	rollout := testSpec()
	rollout.index, rollout.correct, rollout.turns = 2, false, 2
	otherSeed := testSpec()
	otherSeed.seed = 99
	for name, s := range map[string]episodeSpec{"another rollout": rollout, "another seed": otherSeed} {
		if prompt(s) != prompt(base) {
			t.Errorf("%s asks %q, want the problem's own %q", name, prompt(s), prompt(base))
		}
	}
	other := testSpec()
	other.problemID++
	if prompt(other) == prompt(base) {
		t.Error("another problem asks the same question")
	}
}
