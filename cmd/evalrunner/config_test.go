package main

import (
	"bytes"
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"

	"github.com/primeintellect/primeexporter/cmd/internal/trainerlib"
)

func TestTheDefaultsDescribeTheDemoEvaluation(t *testing.T) {
	cfg := testConfig(t)
	if cfg.runKey != "demo-eval" || cfg.runID != "" || cfg.episodes != 50 || cfg.rolloutsPerExample != 2 ||
		cfg.errorRate != 0.1 || cfg.episodeBytes != 2000 || cfg.batch != 50 || !cfg.summary || cfg.jsonBody ||
		cfg.framework != "verifiers" || cfg.Status != trainerlib.StatusCompleted || len(cfg.environments) != 2 ||
		cfg.Endpoint.HostPort != "localhost:4318" || len(cfg.tags) != 0 {
		t.Fatalf("defaults = %+v", cfg)
	}
}

func TestListsAreCommaSeparatedAndTrimmed(t *testing.T) {
	cfg := testConfig(t, "-environments", " gsm8k, owner/env@v2 ,,", "-tags", "nightly, qwen3 ,")
	if !slices.Equal(cfg.environments, []string{"gsm8k", "owner/env@v2"}) || !slices.Equal(cfg.tags, []string{"nightly", "qwen3"}) {
		t.Fatalf("environments %q, tags %q", cfg.environments, cfg.tags)
	}
}

func TestTheIdentityIsAKeyOrAnEvaluationID(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		wantKey string
		wantID  string
	}{
		{"the default key", nil, nil, "demo-eval", ""},
		{"a key", []string{"-run-key", "nightly-7"}, nil, "nightly-7", ""},
		{"an id attaches, without the default key", []string{"-run-id", "ev-1"}, nil, "", "ev-1"},
		{"a hosted sidecar's EVALUATION_ID", nil, map[string]string{"EVALUATION_ID": "ev-2"}, "", "ev-2"},
		{"the flag wins over EVALUATION_ID", []string{"-run-id", "ev-3"}, map[string]string{"EVALUATION_ID": "ev-2"}, "", "ev-3"},
		{"the endpoint from the environment", nil, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://from-env:4318"}, "demo-eval", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseConfig(tc.args, new(bytes.Buffer), func(k string) string { return tc.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if cfg.runKey != tc.wantKey || cfg.runID != tc.wantID {
				t.Fatalf("key %q, id %q; want %q, %q", cfg.runKey, cfg.runID, tc.wantKey, tc.wantID)
			}
			if want := tc.env["OTEL_EXPORTER_OTLP_ENDPOINT"]; want != "" && cfg.Endpoint.String() != want {
				t.Fatalf("endpoint %s, want %s", cfg.Endpoint, want)
			}
		})
	}
}

func TestBadFlagsAreUsageErrorsNamingTheFlag(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no identity", []string{"-run-key", ""}, "-run-key or -run-id"},
		{"both a key and an id", []string{"-run-key", "k", "-run-id", "i"}, "-run-key and -run-id are exclusive"},
		{"no model", []string{"-model", ""}, "-model"},
		{"no environment", []string{"-environments", " , "}, "-environments must name at least one"},
		{"an empty version", []string{"-environments", "gsm8k@"}, `-environments: "gsm8k@"`},
		{"negative episodes", []string{"-episodes", "-1"}, "-episodes"},
		{"no rollouts", []string{"-rollouts-per-example", "0"}, "-rollouts-per-example"},
		{"an error rate over 1", []string{"-error-rate", "1.5"}, "-error-rate 1.5"},
		{"a NaN error rate", []string{"-error-rate", "NaN"}, "-error-rate NaN"},
		{"negative episode bytes", []string{"-episode-bytes", "-1"}, "-episode-bytes"},
		{"an empty batch", []string{"-batch", "0"}, "-batch must"},
		{"a negative batch delay", []string{"-batch-delay", "-1s"}, "-batch-delay"},
		{"an unknown status", []string{"-status", "done"}, `-status "done"`},
		{"a bad endpoint", []string{"-endpoint", "ftp://x:1"}, "-endpoint"},
		{"no export time", []string{"-export-timeout", "0s"}, "-export-timeout"},
		{"an argument", []string{"extra"}, "unexpected arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseConfig(tc.args, new(bytes.Buffer), noEnv)
			var usage trainerlib.UsageError
			if !errors.As(err, &usage) {
				t.Fatalf("err = %v, want a usage error", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %q, want it to name %q", err, tc.want)
			}
		})
	}
	if _, err := parseConfig([]string{"-h"}, new(bytes.Buffer), noEnv); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: err = %v, want flag.ErrHelp", err)
	}
}

func TestLargeEpisodesGoOutAFewPerRequest(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"small episodes: a whole batch", nil, 50},
		{"a smaller batch", []string{"-batch", "7"}, 7},
		{"4 MB episodes", []string{"-episode-bytes", "4000000"}, 4},
		{"episodes over the request budget: one each", []string{"-episode-bytes", "30000000"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := recordsPerRequest(testConfig(t, tc.args...)); got != tc.want {
				t.Fatalf("%d records per request, want %d", got, tc.want)
			}
		})
	}
}
