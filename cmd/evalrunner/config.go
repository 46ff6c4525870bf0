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

// Statuses an evaluation can report in prime.run.end. statusNone is the
// runner's own: it sends no end event, like a runner that dies.
const (
	statusCompleted = "completed"
	statusFailed    = "failed"
	statusCancelled = "cancelled"
	statusCrashed   = "crashed"
	statusNone      = "none"
)

// config is the whole input of a run: the program is deterministic given it.
type config struct {
	endpoint endpoint
	// runKey and runID are the evaluation's identity; exactly one is set.
	runKey       string
	runID        string
	name         string
	model        string
	environments []string
	teamID       string
	tags         []string
	framework    string
	description  string

	episodes           int
	rolloutsPerExample int
	errorRate          float64
	episodeBytes       int
	jsonBody           bool
	seed               uint64

	batch      int
	batchDelay time.Duration
	summary    bool

	status        string
	errorReason   string
	manifest      string
	exportTimeout time.Duration
}

// endpoint is where the OTLP/HTTP receiver listens.
type endpoint struct {
	hostPort string
	// basePath prefixes the signal path (/v1/logs).
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

// splitList splits a comma-separated flag, dropping blanks.
func splitList(s string) []string {
	var out []string
	for e := range strings.SplitSeq(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// parseConfig reads the command line. getenv supplies the fallbacks
// (OTEL_EXPORTER_OTLP_ENDPOINT, and EVALUATION_ID as a hosted sidecar has it),
// so tests do not depend on the process environment.
func parseConfig(args []string, stderr io.Writer, getenv func(string) string) (config, error) {
	fs := flag.NewFlagSet("evalrunner", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: evalrunner [flags]\n\nPlays a short evaluation and sends it as OTLP/HTTP to a collector.\n\nflags:")
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
		tagsFlag     string
	)
	fs.StringVar(&endpointFlag, "endpoint", defaultEndpoint, "OTLP/HTTP receiver: host:port (plain HTTP) or an http(s) URL; env OTEL_EXPORTER_OTLP_ENDPOINT")
	fs.StringVar(&cfg.runKey, "run-key", "demo-eval", "prime.run.key: the runner's identity for the evaluation to create")
	fs.StringVar(&cfg.runID, "run-id", getenv("EVALUATION_ID"), "prime.run.id: attach to this existing evaluation instead of creating one; env EVALUATION_ID")
	fs.StringVar(&cfg.name, "name", "", "prime.run.name: the evaluation's name (default: the platform's, <first environment>-<8 hex>)")
	fs.StringVar(&cfg.model, "model", "Qwen/Qwen3-4B", "prime.run.model")
	fs.StringVar(&envsFlag, "environments", "primeintellect/gsm8k,primeintellect/vf-math@v3", "comma-separated environments (prime.run.environments): owner/name is a hub slug, anything else a name; <env>@<version> pins a version")
	fs.StringVar(&cfg.teamID, "team-id", "", "prime.run.team_id (default: the exporter's team_id)")
	fs.StringVar(&tagsFlag, "tags", "", "comma-separated tags (prime.eval.tags)")
	fs.StringVar(&cfg.framework, "framework", "verifiers", "prime.eval.framework (empty: not sent)")
	fs.StringVar(&cfg.description, "description", "", "prime.eval.description")
	fs.IntVar(&cfg.episodes, "episodes", 50, "episodes (rollouts) to send, one sample each")
	fs.IntVar(&cfg.rolloutsPerExample, "rollouts-per-example", 2, "rollouts of each example; examples take the environments in turn")
	fs.Float64Var(&cfg.errorRate, "error-rate", 0.1, "share of episodes that fail (ok false, one errors entry, no reward)")
	fs.IntVar(&cfg.episodeBytes, "episode-bytes", 2000, "message content per episode, in bytes: the sum of the trace's message contents (a larger value pads the first answer, e.g. 4000000 for 4 MB episodes)")
	fs.BoolVar(&cfg.jsonBody, "json-body", false, "send each document as a JSON string body instead of a map body")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of every generated value")
	fs.IntVar(&cfg.batch, "batch", 50, "flush after every this many episodes")
	fs.DurationVar(&cfg.batchDelay, "batch-delay", 0, "pause between batches")
	fs.BoolVar(&cfg.summary, "summary", true, "send a prime.metrics event with the user summary keys at the end (-summary=false: none)")
	fs.StringVar(&cfg.status, "status", statusCompleted, "how the evaluation ends: completed, failed, cancelled, crashed, or none (send no prime.run.end)")
	fs.StringVar(&cfg.errorReason, "error", "", "prime.run.error for a status other than completed (default: a message naming the status)")
	fs.StringVar(&cfg.manifest, "manifest", "", "write a JSON summary of what was sent (every episode, the summary keys, counts) to this file")
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
	cfg.environments = splitList(envsFlag)
	cfg.tags = splitList(tagsFlag)

	keyGiven := false
	fs.Visit(func(f *flag.Flag) { keyGiven = keyGiven || f.Name == "run-key" })
	if cfg.runID != "" {
		if keyGiven && cfg.runKey != "" {
			return config{}, usageError{"-run-key and -run-id are exclusive: -run-id (or $EVALUATION_ID) attaches to an existing evaluation, -run-key names one to create"}
		}
		cfg.runKey = ""
	}
	if err := cfg.validate(); err != nil {
		return config{}, err
	}
	if cfg.status != statusCompleted && cfg.status != statusNone && cfg.errorReason == "" {
		cfg.errorReason = "evalrunner: simulated " + cfg.status + " evaluation"
	}
	return cfg, nil
}

func (c config) validate() error {
	var errs []error
	if c.runKey == "" && c.runID == "" {
		errs = append(errs, usageError{"-run-key or -run-id is required: the exporter needs an identity for the evaluation"})
	}
	if c.model == "" {
		errs = append(errs, usageError{"-model must not be empty"})
	}
	if len(c.environments) == 0 {
		errs = append(errs, usageError{"-environments must name at least one environment"})
	}
	for _, e := range c.environments {
		if i := strings.LastIndex(e, "@"); i == 0 || i == len(e)-1 {
			errs = append(errs, usageError{fmt.Sprintf("-environments: %q: want <env>@<version> with both sides non-empty", e)})
		}
	}
	if c.episodes < 0 {
		errs = append(errs, usageError{"-episodes must not be negative"})
	}
	if c.rolloutsPerExample < 1 {
		errs = append(errs, usageError{"-rollouts-per-example must be at least 1"})
	}
	if !(c.errorRate >= 0 && c.errorRate <= 1) {
		errs = append(errs, usageError{fmt.Sprintf("-error-rate %v: want a share between 0 and 1", c.errorRate)})
	}
	if c.episodeBytes < 0 {
		errs = append(errs, usageError{"-episode-bytes must not be negative"})
	}
	if c.batch < 1 {
		errs = append(errs, usageError{"-batch must be at least 1"})
	}
	if c.batchDelay < 0 {
		errs = append(errs, usageError{"-batch-delay must not be negative"})
	}
	switch c.status {
	case statusCompleted, statusFailed, statusCancelled, statusCrashed, statusNone:
	default:
		errs = append(errs, usageError{fmt.Sprintf("-status %q: want completed, failed, cancelled, crashed or none", c.status)})
	}
	if c.exportTimeout <= 0 {
		errs = append(errs, usageError{"-export-timeout must be positive"})
	}
	return errors.Join(errs...)
}
