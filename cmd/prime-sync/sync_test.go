package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/rft"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// offlineRuns writes one finished offline run per team into one offline
// directory, as the exporter does, and returns their run directories.
func offlineRuns(t *testing.T, teams ...string) (offlineDir string, runDirs []string) {
	t.Helper()
	offlineDir = t.TempDir()
	off, err := platform.NewOffline(offlineDir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, team := range teams {
		run, err := off.CreateRun(ctx, rft.CreateRunRequest{BaseModel: "m", TeamID: team, Environments: []rft.Environment{{ID: "env"}}},
			platform.Origin{Identity: `prime.run.key="k` + strconv.Itoa(i) + `"`, TeamID: team})
		if err != nil {
			t.Fatal(err)
		}
		if err := off.PostMetrics(ctx, run.ID, map[string]float64{"step": 1, "loss": 0.5}); err != nil {
			t.Fatal(err)
		}
		if err := off.Finalize(ctx, run.ID, 0); err != nil {
			t.Fatal(err)
		}
		runDirs = append(runDirs, platform.RunDirectory(offlineDir, run.ID))
	}
	return offlineDir, runDirs
}

func TestAFailedRunIsNamedAtTheEndWhileTheOthersSync(t *testing.T) {
	srv := rfttest.NewServer(rfttest.Options{APIKey: "k", AllowedTeams: []string{"team-1"}})
	defer srv.Close()
	dir, runs := offlineRuns(t, "team-1", "team-2", "team-1", "team-1")

	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--parallel-runs", "2", dir}, &stdout, &stderr,
		env(map[string]string{"PRIME_API_KEY": "k", "PRIME_API_BASE": srv.BaseURL()}), false)

	if code != exitUsage {
		t.Errorf("exit %d, want %d: a run the platform refuses needs a fix", code, exitUsage)
	}
	if got := len(srv.Runs()); got != 3 {
		t.Errorf("%d runs on the platform, want the other 3", got)
	}
	if lines := strings.Count(stdout.String(), "\n"); lines != 4 {
		t.Errorf("%d summary lines, want one per run:\n%s", lines, stdout.String())
	}
	want := "prime-sync: 1 of 4 run(s) need a fix first (see their lines): " + runs[1] + "\n"
	if !strings.HasSuffix(stderr.String(), want) {
		t.Errorf("stderr ends:\n%s\nwant it to end with:\n%s", stderr.String(), want)
	}
	if !strings.Contains(stderr.String(), "prime-sync: 4 run(s)") || !strings.Contains(stderr.String(), "(4/4 runs ended)") {
		t.Errorf("one progress over all runs, in plain lines on a pipe:\n%s", stderr.String())
	}
}
