package main

import (
	"errors"
	"io"
	"strings"
	"time"

	"github.com/primeintellect/primeexporter/cmd/internal/trainerlib"
)

// config is the whole input of a run: the program is deterministic given it.
type config struct {
	// Common holds -endpoint, -seed, -status, -error and -export-timeout.
	trainerlib.Common
	steps              int
	episodesPerStep    int
	rolloutsPerExample int
	runKey             string
	runName            string
	runID              string
	teamID             string
	// pod is the Kubernetes pod the trainer runs in, "<namespace>/<name>",
	// as a pod announces itself from the downward API: the collector binds
	// the node's GPU metrics of that pod to the run.
	pod              string
	model            string
	environments     []string
	stepDelay        time.Duration
	manifest         string
	startStep        int
	episodeTextBytes int
	evalEvery        int
}

// validate lists every bad flag, each a usage error.
func (c config) validate() error {
	type usage = trainerlib.UsageError
	errs := []error{trainerlib.AtLeastOne("-steps", c.steps)}
	if c.startStep < 1 || c.startStep > c.steps {
		errs = append(errs, usage("-start-step must be between 1 and -steps"))
	}
	errs = append(errs,
		trainerlib.AtLeastOne("-episodes-per-step", c.episodesPerStep),
		trainerlib.AtLeastOne("-rollouts-per-example", c.rolloutsPerExample))
	if c.runKey == "" && c.runID == "" {
		errs = append(errs, usage("-run-key or -run-id is required: the exporter needs an identity for the run"))
	}
	if ns, name, ok := strings.Cut(c.pod, "/"); c.pod != "" && (!ok || ns == "" || name == "") {
		errs = append(errs, usage("-pod must be <namespace>/<name>"))
	}
	if len(c.environments) == 0 {
		errs = append(errs, usage("-environments must name at least one environment"))
	}
	// errors.Join drops the nil of a flag that is fine.
	return errors.Join(append(errs,
		c.StatusError(),
		trainerlib.NotNegative("-step-delay", c.stepDelay),
		trainerlib.NotNegative("-episode-text-bytes", c.episodeTextBytes),
		trainerlib.NotNegative("-eval-every", c.evalEvery),
		c.ExportTimeoutError())...)
}

// parseConfig reads the command line. getenv supplies the fallbacks, so tests
// do not depend on the process environment.
func parseConfig(args []string, stderr io.Writer, getenv func(string) string) (config, error) {
	var cfg config
	command := trainerlib.Command{Name: "demotrainer", Plays: "a short RL training run", Noun: "run"}
	fs := command.NewFlagSet(stderr, getenv, &cfg.Common)
	fs.IntVar(&cfg.steps, "steps", 30, "training steps to play")
	fs.IntVar(&cfg.episodesPerStep, "episodes-per-step", 4, "train episodes (rollouts) per step; also prime.training.batch_size")
	fs.IntVar(&cfg.rolloutsPerExample, "rollouts-per-example", 2, "rollouts per problem; advantages are taken within each group")
	fs.StringVar(&cfg.runKey, "run-key", "demo-run", "prime.run.key: the trainer's identity for the run")
	fs.StringVar(&cfg.runName, "run-name", "demo-run", "prime.run.name")
	fs.StringVar(&cfg.runID, "run-id", "", "prime.run.id: attach to this existing platform run instead of creating one")
	fs.StringVar(&cfg.teamID, "team-id", "", "prime.run.team_id: the team to create the run for (a collector without team_id, such as the multi-tenant gateway, needs it)")
	fs.StringVar(&cfg.pod, "pod", "", "the Kubernetes pod the trainer runs in, <namespace>/<name> (k8s.namespace.name, k8s.pod.name): a node's GPU metrics of that pod join the run")
	fs.StringVar(&cfg.model, "model", "Qwen/Qwen3-0.6B", "prime.run.model")
	envs := fs.String("environments", "primeintellect/gsm8k,primeintellect/vf-math@v3", "comma-separated environments (prime.run.environments); <env>@<version> pins a version")
	fs.DurationVar(&cfg.stepDelay, "step-delay", 20*time.Millisecond, "pause between steps")
	fs.IntVar(&cfg.startStep, "start-step", 1, "first step to play: a second process continues a run from here (up to -steps)")
	fs.StringVar(&cfg.manifest, "manifest", "", "write a JSON summary of what was sent (episodes per dispatch step) to this file")
	fs.IntVar(&cfg.episodeTextBytes, "episode-text-bytes", 2000, "chat text per episode, in bytes")
	fs.IntVar(&cfg.evalEvery, "eval-every", 5, "send one eval episode every N steps (0: none)")

	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	cfg.environments = trainerlib.SplitList(*envs)
	if err := cfg.validate(); err != nil {
		return config{}, err
	}
	return cfg, nil
}
