package main

import (
	"bytes"
	"errors"
	"flag"
	"testing"
)

func TestEndpointsAreHostPortOrAnHTTPURL(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want endpoint
	}{
		{"localhost:4318", endpoint{hostPort: "localhost:4318", insecure: true}},
		{"http://collector:4318", endpoint{hostPort: "collector:4318", insecure: true}},
		{"https://collector:4318/otlp/", endpoint{hostPort: "collector:4318", basePath: "/otlp"}},
	} {
		got, err := parseEndpoint(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseEndpoint(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "grpc://collector:4317", "localhost:4318/v1", "http://"} {
		if got, err := parseEndpoint(bad); err == nil {
			t.Errorf("parseEndpoint(%q) = %+v, want an error", bad, got)
		}
	}
}

func TestTheEndpointFallsBackToTheOTLPEnvironmentVariable(t *testing.T) {
	getenv := func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			return "http://from-env:4318"
		}
		return ""
	}
	cfg, err := parseConfig(nil, new(bytes.Buffer), getenv)
	if err != nil || cfg.endpoint.hostPort != "from-env:4318" {
		t.Fatalf("endpoint = %+v, %v; want from-env:4318", cfg.endpoint, err)
	}
	cfg, err = parseConfig([]string{"-endpoint", "flag:1"}, new(bytes.Buffer), getenv)
	if err != nil || cfg.endpoint.hostPort != "flag:1" {
		t.Fatalf("endpoint = %+v, %v; want the flag to win", cfg.endpoint, err)
	}
}

func TestTheDefaultsDescribeTheDemoRun(t *testing.T) {
	cfg, err := parseConfig(nil, new(bytes.Buffer), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.steps != 30 || cfg.episodesPerStep != 4 || cfg.runKey != "demo-run" || cfg.status != statusCompleted ||
		cfg.model != "Qwen/Qwen3-0.6B" || len(cfg.environments) != 2 || cfg.evalEvery != 5 || cfg.seed != 1 {
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
		{"extra"},
	} {
		_, err := parseConfig(args, new(bytes.Buffer), noEnv)
		var usage usageError
		if !errors.As(err, &usage) {
			t.Errorf("%v: err = %v, want a usage error", args, err)
		}
	}
	if _, err := parseConfig([]string{"-h"}, new(bytes.Buffer), noEnv); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: err = %v, want flag.ErrHelp", err)
	}
}
