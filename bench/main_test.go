package main

import (
	"strings"
	"testing"
)

func TestEveryShapeRunsBothSizesUnlessShapesPicksSome(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"plain-2KB", "plain-200KB", "verifiers-2KB", "verifiers-200KB", "native-2KB", "native-200KB", "tokens-2KB", "tokens-200KB"}},
		{[]string{"-shapes", "tokens,verifiers", "-quick"}, []string{"tokens-2KB", "tokens-200KB", "verifiers-2KB", "verifiers-200KB"}},
	} {
		o, err := parseFlags(append([]string{"-collector", "x"}, tc.args...))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range o.loads {
			got = append(got, l.name)
			if l.large != strings.HasSuffix(l.name, "200KB") || l.shape.name+"-"+l.size != l.name {
				t.Errorf("load %s: %+v", l.name, l)
			}
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%v: loads %v, want %v", tc.args, got, tc.want)
		}
	}
	if _, err := parseFlags([]string{"-collector", "x", "-shapes", "chat"}); err == nil || !strings.Contains(err.Error(), `unknown shape "chat"`) {
		t.Errorf("an unknown shape: %v", err)
	}
}

func TestTheQueueIs32MiBUnlessQueueMiBSaysOtherwise(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, 32},
		{[]string{"-queue-mib", "256"}, 256},
	} {
		o, err := parseFlags(append([]string{"-collector", "x"}, tc.args...))
		if err != nil {
			t.Fatal(err)
		}
		if o.run.queueMiB != tc.want {
			t.Errorf("%v: queue %d MiB, want %d", tc.args, o.run.queueMiB, tc.want)
		}
	}
	if _, err := parseFlags([]string{"-collector", "x", "-queue-mib", "0"}); err == nil || !strings.Contains(err.Error(), "-queue-mib") {
		t.Errorf("a queue of 0 MiB: %v", err)
	}
}
