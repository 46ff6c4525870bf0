package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/primeintellect/primeexporter/rft"
)

const (
	defaultEndpoint = "https://api.primeintellect.ai"
	defaultFrontend = "https://app.primeintellect.ai"
)

// config is the command line and environment, checked.
type config struct {
	endpoint string // the API prefix, normalised as the exporter does
	frontend string
	teamID   string
	runID    string
	dryRun   bool
	parallel int
	runs     int // --parallel-runs
	retryFor time.Duration
	apiKey   string
	paths    []string
}

func parseConfig(args []string, stderr io.Writer, getenv func(string) string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("prime-sync", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: prime-sync [flags] PATH...")
		fmt.Fprintln(stderr, "       prime-sync report PATH...   (a report.html beside each run; no key needed)")
		fmt.Fprintln(stderr, "  PATH: a run directory (holding run.json) or an offline directory of them.")
		fmt.Fprintln(stderr, "  The API key is read from PRIME_API_KEY.")
		fs.PrintDefaults()
	}
	endpoint := fs.String("endpoint", cmp.Or(getenv("PRIME_API_BASE"), defaultEndpoint), "the platform's API base (default $PRIME_API_BASE, else "+defaultEndpoint+")")
	fs.StringVar(&cfg.frontend, "frontend", defaultFrontend, "the dashboard's address, for the links in the summary")
	fs.StringVar(&cfg.teamID, "team-id", getenv("PRIME_TEAM_ID"), "team of runs whose run.json names none (default $PRIME_TEAM_ID)")
	fs.StringVar(&cfg.runID, "run-id", "", "attach the one run directory to this existing platform run instead of creating one")
	fs.BoolVar(&cfg.dryRun, "dry-run", false, "say what would be sent, and send nothing")
	fs.IntVar(&cfg.parallel, "parallel", 4, "objects uploaded at once, in each run")
	fs.IntVar(&cfg.runs, "parallel-runs", 4, "runs synced at once, each with its own journal")
	fs.DurationVar(&cfg.retryFor, "retry-for", 5*time.Minute, "how long a call failing retryably is retried before the run is left for the next sync")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	cfg.paths = fs.Args()
	prefix, err := rft.NormalizeBaseURL(*endpoint)
	switch {
	case len(cfg.paths) == 0:
		fs.Usage()
		return cfg, errors.New("no PATH given: name a run directory or an offline directory")
	case err != nil:
		return cfg, fmt.Errorf("--endpoint (or PRIME_API_BASE): %w", err)
	case cfg.parallel < 1:
		return cfg, fmt.Errorf("--parallel must be at least 1, got %d", cfg.parallel)
	case cfg.runs < 1:
		return cfg, fmt.Errorf("--parallel-runs must be at least 1, got %d", cfg.runs)
	case cfg.retryFor < 0:
		return cfg, fmt.Errorf("--retry-for must not be negative, got %s", cfg.retryFor)
	}
	cfg.endpoint = prefix
	cfg.apiKey = getenv("PRIME_API_KEY")
	if cfg.apiKey == "" && !cfg.dryRun {
		return cfg, errors.New("PRIME_API_KEY is not set: export the platform API key (it is never taken from a flag)")
	}
	return cfg, nil
}
