package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func TestUsageAndConfigurationErrorsExit2NamingWhatToFix(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"no path", nil, map[string]string{"PRIME_API_KEY": "k"}, "no PATH given"},
		{"no key", []string{dir}, nil, "PRIME_API_KEY is not set"},
		{"a bad endpoint", []string{"--endpoint", "ftp://h", dir}, map[string]string{"PRIME_API_KEY": "k"}, "--endpoint (or PRIME_API_BASE)"},
		{"a bad PRIME_API_BASE", []string{dir}, map[string]string{"PRIME_API_KEY": "k", "PRIME_API_BASE": "::"}, "--endpoint (or PRIME_API_BASE)"},
		{"no parallelism", []string{"--parallel", "0", dir}, map[string]string{"PRIME_API_KEY": "k"}, "--parallel must be at least 1"},
		{"no runs at once", []string{"--parallel-runs", "0", dir}, map[string]string{"PRIME_API_KEY": "k"}, "--parallel-runs must be at least 1, got 0"},
		{"negative runs at once", []string{"--parallel-runs=-2", dir}, map[string]string{"PRIME_API_KEY": "k"}, "--parallel-runs must be at least 1, got -2"},
		{"runs at once not a number", []string{"--parallel-runs", "many", dir}, map[string]string{"PRIME_API_KEY": "k"}, `invalid value "many" for flag -parallel-runs`},
		{"a directory without runs", []string{dir}, map[string]string{"PRIME_API_KEY": "k"}, "holds no run.json and no run directories"},
		{"an unknown flag", []string{"--api-key", "k", dir}, nil, "flag provided but not defined: -api-key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr, env(tt.env), false)
			if code != exitUsage || !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, stderr.String(), tt.want)
			}
		})
	}
}

func TestTheEndpointIsNormalisedAsTheExportersIs(t *testing.T) {
	for in, want := range map[string]string{
		"":                           "https://api.primeintellect.ai/api/v1",
		"https://h/api/v1/rft":       "https://h/api/v1",
		"https://h/api/internal/rft": "https://h/api/internal",
		"https://h/":                 "https://h/api/v1",
	} {
		cfg, err := parseConfig([]string{"x"}, &bytes.Buffer{}, env(map[string]string{"PRIME_API_KEY": "k", "PRIME_API_BASE": in}))
		if err != nil || cfg.endpoint != want {
			t.Errorf("PRIME_API_BASE %q: %q, %v; want %q", in, cfg.endpoint, err, want)
		}
	}
}

func TestFourRunsSyncAtOnceByDefault(t *testing.T) {
	cfg, err := parseConfig([]string{"x"}, &bytes.Buffer{}, env(map[string]string{"PRIME_API_KEY": "k"}))
	if err != nil || cfg.runs != 4 || cfg.parallel != 4 {
		t.Fatalf("--parallel-runs %d, --parallel %d, %v; want 4 and 4", cfg.runs, cfg.parallel, err)
	}
}

func TestADryRunNeedsNoKey(t *testing.T) {
	cfg, err := parseConfig([]string{"--dry-run", "x"}, &bytes.Buffer{}, env(nil))
	if err != nil || !cfg.dryRun {
		t.Fatalf("%+v, %v", cfg, err)
	}
}
