package main

import (
	"bytes"
	"errors"
	"flag"
	"testing"

	"github.com/primeintellect/primeexporter/cmd/internal/trainerlib"
)

func TestTheDefaultsDescribeTheDemoRun(t *testing.T) {
	cfg, err := parseConfig(nil, new(bytes.Buffer), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.steps != 30 || cfg.episodesPerStep != 4 || cfg.runKey != "demo-run" || cfg.Status != trainerlib.StatusCompleted ||
		cfg.model != "Qwen/Qwen3-0.6B" || len(cfg.environments) != 2 || cfg.evalEvery != 5 || cfg.Seed != 1 {
		t.Fatalf("defaults = %+v", cfg)
	}
}

func TestBadFlagsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-steps", "0"},
		{"-episodes-per-step", "0"},
		{"-status", "done"},
		{"-run-key", ""},
		{"-environments", " , "},
		{"-endpoint", "ftp://x:1"},
		{"-export-timeout", "0s"},
		{"-pod", "trainer-a-0"},
		{"-pod", "rl/"},
		{"extra"},
	} {
		_, err := parseConfig(args, new(bytes.Buffer), noEnv)
		var usage trainerlib.UsageError
		if !errors.As(err, &usage) {
			t.Errorf("%v: err = %v, want a usage error", args, err)
		}
	}
	if _, err := parseConfig([]string{"-h"}, new(bytes.Buffer), noEnv); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: err = %v, want flag.ErrHelp", err)
	}
}
