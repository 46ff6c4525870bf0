package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
)

// Run statuses a trainer can report in prime.run.end. statusNone is the
// demo's own: it sends no end event, like a trainer that dies.
const (
	statusCompleted = "completed"
	statusFailed    = "failed"
	statusCancelled = "cancelled"
	statusCrashed   = "crashed"
	statusNone      = "none"
)

// config is the whole input of a run: the program is deterministic given it.
type config struct {
	endpoint           endpoint
	steps              int
	episodesPerStep    int
	rolloutsPerExample int
	runKey             string
	runName            string
	runID              string
	teamID             string
	model              string
	environments       []string
	status             string
	errorReason        string
	seed               uint64
	stepDelay          time.Duration
	manifest           string
	startStep          int
	episodeTextBytes   int
	evalEvery          int
	exportTimeout      time.Duration
}

// endpoint is where the OTLP/HTTP receiver listens.
type endpoint struct {
	hostPort string
	// basePath prefixes the signal paths (/v1/metrics, /v1/logs).
	basePath string
	insecure bool
}

func (e endpoint) String() string {
	scheme := "https"
	if e.insecure {
		scheme = "http"
	}
	return scheme + "://" + e.hostPort + e.basePath
}

// parseEndpoint accepts host:port (plain HTTP, the collector's default
// receiver) or an http(s) URL, the form OTEL_EXPORTER_OTLP_ENDPOINT takes.
func parseEndpoint(s string) (endpoint, error) {
	if !strings.Contains(s, "://") {
		if s == "" || strings.ContainsAny(s, "/?#") {
			return endpoint{}, fmt.Errorf("want host:port or an http(s) URL, got %q", s)
		}
		return endpoint{hostPort: s, insecure: true}, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return endpoint{}, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return endpoint{}, fmt.Errorf("scheme must be http or https, got %q", u.Scheme)
	}
	if u.Host == "" {
		return endpoint{}, fmt.Errorf("no host in %q", s)
	}
	return endpoint{
		hostPort: u.Host,
		basePath: strings.TrimSuffix(u.Path, "/"),
		insecure: u.Scheme == "http",
	}, nil
}

// parseConfig reads the command line. getenv supplies the fallbacks, so tests
// do not depend on the process environment.
func parseConfig(args []string, stderr io.Writer, getenv func(string) string) (config, error) {
	fs := flag.NewFlagSet("demotrainer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: demotrainer [flags]\n\nPlays a short RL training run and sends it as OTLP/HTTP to a collector.\n\nflags:")
		fs.PrintDefaults()
	}

	defaultEndpoint := "localhost:4318"
	if v := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); v != "" {
		defaultEndpoint = v
	}
	var (
		cfg          config
		endpointFlag string
		envsFlag     string
	)
	fs.StringVar(&endpointFlag, "endpoint", defaultEndpoint, "OTLP/HTTP receiver: host:port (plain HTTP) or an http(s) URL; env OTEL_EXPORTER_OTLP_ENDPOINT")
	fs.IntVar(&cfg.steps, "steps", 30, "training steps to play")
	fs.IntVar(&cfg.episodesPerStep, "episodes-per-step", 4, "train episodes (rollouts) per step; also prime.training.batch_size")
	fs.IntVar(&cfg.rolloutsPerExample, "rollouts-per-example", 2, "rollouts per problem; advantages are taken within each group")
	fs.StringVar(&cfg.runKey, "run-key", "demo-run", "prime.run.key: the trainer's identity for the run")
	fs.StringVar(&cfg.runName, "run-name", "demo-run", "prime.run.name")
	fs.StringVar(&cfg.runID, "run-id", "", "prime.run.id: attach to this existing platform run instead of creating one")
	fs.StringVar(&cfg.teamID, "team-id", "", "prime.run.team_id: the team to create the run for (a collector without team_id, such as the multi-tenant gateway, needs it)")
	fs.StringVar(&cfg.model, "model", "Qwen/Qwen3-0.6B", "prime.run.model")
	fs.StringVar(&envsFlag, "environments", "primeintellect/gsm8k,primeintellect/vf-math@v3", "comma-separated environments (prime.run.environments); <env>@<version> pins a version")
	fs.StringVar(&cfg.status, "status", statusCompleted, "how the run ends: completed, failed, cancelled, crashed, or none (send no prime.run.end)")
	fs.StringVar(&cfg.errorReason, "error", "", "prime.run.error for a status other than completed (default: a message naming the status)")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of every generated value")
	fs.DurationVar(&cfg.stepDelay, "step-delay", 20*time.Millisecond, "pause between steps")
	fs.IntVar(&cfg.startStep, "start-step", 1, "first step to play: a second process continues a run from here (up to -steps)")
	fs.StringVar(&cfg.manifest, "manifest", "", "write a JSON summary of what was sent (episodes per dispatch step) to this file")
	fs.IntVar(&cfg.episodeTextBytes, "episode-text-bytes", 2000, "chat text per episode, in bytes")
	fs.IntVar(&cfg.evalEvery, "eval-every", 5, "send one eval episode every N steps (0: none)")
	fs.DurationVar(&cfg.exportTimeout, "export-timeout", 10*time.Second, "time limit of one export, retries included")

	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, usageError{fmt.Sprintf("unexpected arguments: %q", fs.Args())}
	}
	ep, err := parseEndpoint(endpointFlag)
	if err != nil {
		return config{}, usageError{"-endpoint: " + err.Error()}
	}
	cfg.endpoint = ep
	for e := range strings.SplitSeq(envsFlag, ",") {
		if e = strings.TrimSpace(e); e != "" {
			cfg.environments = append(cfg.environments, e)
		}
	}
	if err := cfg.validate(); err != nil {
		return config{}, err
	}
	if cfg.status != statusCompleted && cfg.status != statusNone && cfg.errorReason == "" {
		cfg.errorReason = "demotrainer: simulated " + cfg.status + " run"
	}
	return cfg, nil
}

func (c config) validate() error {
	var errs []error
	if c.steps < 1 {
		errs = append(errs, usageError{"-steps must be at least 1"})
	}
	if c.startStep < 1 || c.startStep > c.steps {
		errs = append(errs, usageError{"-start-step must be between 1 and -steps"})
	}
	if c.episodesPerStep < 1 {
		errs = append(errs, usageError{"-episodes-per-step must be at least 1"})
	}
	if c.rolloutsPerExample < 1 {
		errs = append(errs, usageError{"-rollouts-per-example must be at least 1"})
	}
	if c.runKey == "" && c.runID == "" {
		errs = append(errs, usageError{"-run-key or -run-id is required: the exporter needs an identity for the run"})
	}
	if len(c.environments) == 0 {
		errs = append(errs, usageError{"-environments must name at least one environment"})
	}
	switch c.status {
	case statusCompleted, statusFailed, statusCancelled, statusCrashed, statusNone:
	default:
		errs = append(errs, usageError{fmt.Sprintf("-status %q: want completed, failed, cancelled, crashed or none", c.status)})
	}
	if c.stepDelay < 0 {
		errs = append(errs, usageError{"-step-delay must not be negative"})
	}
	if c.episodeTextBytes < 0 {
		errs = append(errs, usageError{"-episode-text-bytes must not be negative"})
	}
	if c.evalEvery < 0 {
		errs = append(errs, usageError{"-eval-every must not be negative"})
	}
	if c.exportTimeout <= 0 {
		errs = append(errs, usageError{"-export-timeout must be positive"})
	}
	return errors.Join(errs...)
}
