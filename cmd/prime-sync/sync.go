package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/offlinesync"
	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/rft"
)

// syncAll syncs every run under cfg.paths and prints one summary line per
// run to stdout; progress and errors go to stderr.
func syncAll(ctx context.Context, cfg config, stdout, stderr io.Writer, terminal bool) int {
	dirs, err := offlinesync.RunDirs(cfg.paths)
	if err != nil {
		fmt.Fprintln(stderr, "prime-sync:", err)
		return exitUsage
	}
	if cfg.runID != "" && len(dirs) != 1 {
		fmt.Fprintf(stderr, "prime-sync: --run-id attaches one run directory, and %d were given\n", len(dirs))
		return exitUsage
	}
	opts := offlinesync.Options{
		Endpoint: cfg.endpoint, Frontend: cfg.frontend, TeamID: cfg.teamID, RunID: cfg.runID,
		DryRun: cfg.dryRun, Parallel: cfg.parallel, ParallelRuns: cfg.runs, RetryFor: cfg.retryFor,
	}
	switch {
	case cfg.dryRun:
	case terminal:
		opts.Progress = offlinesync.NewBar(stderr)
	default:
		opts.Progress = offlinesync.NewLines(stderr)
	}
	if !cfg.dryRun {
		client, err := rft.New(rft.Options{BaseURL: cfg.endpoint, APIKey: cfg.apiKey, UserAgent: "prime-sync", HTTPClient: platformClient(cfg)})
		if err != nil {
			fmt.Fprintln(stderr, "prime-sync:", err)
			return exitUsage
		}
		defer client.CloseIdleConnections()
		// The exporter's own backend: its 401 guard, and presign → PUT →
		// confirm resumed from saved progress. Its log lines are the
		// collector's; prime-sync reports through its summaries.
		opts.Platform = platform.NewOnline(client, noHost{}, zap.NewNop())
	}

	reports := offlinesync.Sync(ctx, opts, dirs)
	for _, r := range reports {
		if cfg.dryRun && len(r.Plan) > 0 {
			fmt.Fprintf(stdout, "%s (%s): would\n", r.Dir, r.Identity)
			for _, p := range r.Plan {
				fmt.Fprintf(stdout, "  %s\n", p)
			}
			if r.Err != nil {
				fmt.Fprintf(stdout, "  but cannot yet: %v\n", r.Err)
			}
			continue
		}
		fmt.Fprintln(stdout, r.Summary())
	}
	if !cfg.dryRun {
		for line := range strings.Lines(offlinesync.Unfinished(reports)) {
			fmt.Fprint(stderr, "prime-sync: ", line)
		}
	}
	return offlinesync.ExitCode(reports)
}

// platformTimeout bounds one platform call, as the rft client's default
// client does.
const platformTimeout = 60 * time.Second

// platformClient keeps an idle connection for each call that can be in
// flight at once (Go keeps two per host): runs × objects, where HTTP/1.1
// carries one call a connection.
func platformClient(cfg config) *http.Client {
	dt, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return nil // replaced by a wrapper we cannot clone: the client's default
	}
	tr := dt.Clone()
	tr.MaxIdleConnsPerHost = cfg.runs * cfg.parallel
	return &http.Client{Transport: tr, Timeout: platformTimeout}
}

// noHost is the component.Host the online backend reports a refused key
// to; prime-sync has no extensions to hear it.
type noHost struct{}

func (noHost) GetExtensions() map[component.ID]component.Component { return nil }
