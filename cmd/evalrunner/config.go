package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/primeintellect/primeexporter/cmd/internal/trainerlib"
)

// config is the whole input of a run: the program is deterministic given it.
type config struct {
	// Common holds -endpoint, -seed, -status, -error and -export-timeout.
	trainerlib.Common
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

	batch      int
	batchDelay time.Duration
	summary    bool

	manifest string
}

// parseConfig reads the command line. getenv supplies the fallbacks
// (OTEL_EXPORTER_OTLP_ENDPOINT, and EVALUATION_ID as a hosted sidecar has it),
// so tests do not depend on the process environment.
func parseConfig(args []string, stderr io.Writer, getenv func(string) string) (config, error) {
	var cfg config
	command := trainerlib.Command{Name: "evalrunner", Plays: "a short evaluation", Noun: "evaluation"}
	fs := command.NewFlagSet(stderr, getenv, &cfg.Common)
	fs.StringVar(&cfg.runKey, "run-key", "demo-eval", "prime.run.key: the runner's identity for the evaluation to create")
	fs.StringVar(&cfg.runID, "run-id", getenv("EVALUATION_ID"), "prime.run.id: attach to this existing evaluation instead of creating one; env EVALUATION_ID")
	fs.StringVar(&cfg.name, "name", "", "prime.run.name: the evaluation's name (default: the platform's, <first environment>-<8 hex>)")
	fs.StringVar(&cfg.model, "model", "Qwen/Qwen3-4B", "prime.run.model")
	envs := fs.String("environments", "primeintellect/gsm8k,primeintellect/vf-math@v3", "comma-separated environments (prime.run.environments): owner/name is a hub slug, anything else a name; <env>@<version> pins a version")
	fs.StringVar(&cfg.teamID, "team-id", "", "prime.run.team_id (default: the exporter's team_id)")
	tags := fs.String("tags", "", "comma-separated tags (prime.eval.tags)")
	fs.StringVar(&cfg.framework, "framework", "verifiers", "prime.eval.framework (empty: not sent)")
	fs.StringVar(&cfg.description, "description", "", "prime.eval.description")
	fs.IntVar(&cfg.episodes, "episodes", 50, "episodes (rollouts) to send, one sample each")
	fs.IntVar(&cfg.rolloutsPerExample, "rollouts-per-example", 2, "rollouts of each example; examples take the environments in turn")
	fs.Float64Var(&cfg.errorRate, "error-rate", 0.1, "share of episodes that fail (ok false, one errors entry, no reward)")
	fs.IntVar(&cfg.episodeBytes, "episode-bytes", 2000, "message content per episode, in bytes: the sum of the trace's message contents (a larger value pads the first answer, e.g. 4000000 for 4 MB episodes)")
	fs.BoolVar(&cfg.jsonBody, "json-body", false, "send each document as a JSON string body instead of a map body")
	fs.IntVar(&cfg.batch, "batch", 50, "flush after every this many episodes")
	fs.DurationVar(&cfg.batchDelay, "batch-delay", 0, "pause between batches")
	fs.BoolVar(&cfg.summary, "summary", true, "send a prime.metrics event with the user summary keys at the end (-summary=false: none)")
	fs.StringVar(&cfg.manifest, "manifest", "", "write a JSON summary of what was sent (every episode, the summary keys, counts) to this file")

	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	cfg.environments = trainerlib.SplitList(*envs)
	cfg.tags = trainerlib.SplitList(*tags)

	keyGiven := false
	fs.Visit(func(f *flag.Flag) { keyGiven = keyGiven || f.Name == "run-key" })
	if cfg.runID != "" {
		if keyGiven && cfg.runKey != "" {
			return config{}, trainerlib.UsageError("-run-key and -run-id are exclusive: -run-id (or $EVALUATION_ID) attaches to an existing evaluation, -run-key names one to create")
		}
		cfg.runKey = ""
	}
	if err := cfg.validate(); err != nil {
		return config{}, err
	}
	return cfg, nil
}

// validate lists every bad flag, each a usage error.
func (c config) validate() error {
	type usage = trainerlib.UsageError
	var errs []error
	if c.runKey == "" && c.runID == "" {
		errs = append(errs, usage("-run-key or -run-id is required: the exporter needs an identity for the evaluation"))
	}
	if c.model == "" {
		errs = append(errs, usage("-model must not be empty"))
	}
	if len(c.environments) == 0 {
		errs = append(errs, usage("-environments must name at least one environment"))
	}
	for _, e := range c.environments {
		if i := strings.LastIndex(e, "@"); i == 0 || i == len(e)-1 {
			errs = append(errs, usage(fmt.Sprintf("-environments: %q: want <env>@<version> with both sides non-empty", e)))
		}
	}
	errs = append(errs,
		trainerlib.NotNegative("-episodes", c.episodes),
		trainerlib.AtLeastOne("-rollouts-per-example", c.rolloutsPerExample))
	if !(c.errorRate >= 0 && c.errorRate <= 1) {
		errs = append(errs, usage(fmt.Sprintf("-error-rate %v: want a share between 0 and 1", c.errorRate)))
	}
	// errors.Join drops the nil of a flag that is fine.
	return errors.Join(append(errs,
		trainerlib.NotNegative("-episode-bytes", c.episodeBytes),
		trainerlib.AtLeastOne("-batch", c.batch),
		trainerlib.NotNegative("-batch-delay", c.batchDelay),
		c.StatusError(),
		c.ExportTimeoutError())...)
}
