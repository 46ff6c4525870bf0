package main

import (
	"bytes"
	"testing"
)

func TestAdvantagesSumToZeroWithinEachGroup(t *testing.T) {
	cfg, err := parseConfig([]string{"-episodes-per-step", "7", "-rollouts-per-example", "3"}, new(bytes.Buffer), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	for step := 1; step <= cfg.steps; step++ {
		p := planStep(cfg, step)
		if len(p.episodes) != 7 {
			t.Fatalf("step %d has %d episodes, want 7", step, len(p.episodes))
		}
		for lo := 0; lo < 7; lo += 3 {
			sum := 0.0
			for _, e := range p.episodes[lo:min(lo+3, 7)] {
				sum += e.advantage
			}
			if sum > 1e-5 || sum < -1e-5 {
				t.Errorf("step %d: advantages of the group at %d sum to %v, want 0", step, lo, sum)
			}
		}
	}
}

func TestTheLossFallsOverTheRun(t *testing.T) {
	cfg, err := parseConfig(nil, new(bytes.Buffer), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	first, last := planStep(cfg, 1), planStep(cfg, cfg.steps)
	if last.loss >= first.loss {
		t.Fatalf("loss went from %v to %v, want it to fall", first.loss, last.loss)
	}
}
