package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// trainOfflineRuns plays n whole runs, one after another, through one
// offline collector (offlineSyncConfig; run keys sync-run-1…n) and returns
// their run directories once every run.json records its end.
func trainOfflineRuns(t *testing.T, n, steps int, trainerArgs ...string) []string {
	t.Helper()
	return trainOfflineRunsWith(t, offlineSyncConfig(t), n, steps, trainerArgs...)
}

// trainOfflineRunsWith is trainOfflineRuns through a collector on config,
// which writes to ${env:PRIME_OFFLINE_DIR}.
func trainOfflineRunsWith(t *testing.T, config string, n, steps int, trainerArgs ...string) []string {
	t.Helper()
	otelcol, trainer := binaries(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	c := startCollector(t, otelcol, config, "PRIME_OTLP_HTTP="+addr, "PRIME_OFFLINE_DIR="+dir, "PRIME_TEAM="+syncTeam)
	for i := 1; i <= n; i++ {
		runTrainer(t, trainer, addr, append([]string{"-steps", itoa(steps), "-step-delay", "2ms",
			"-run-key", fmt.Sprintf("sync-run-%d", i), "-seed", itoa(i)}, trainerArgs...)...)
	}
	var runDirs []string
	eventually(t, fmt.Sprintf("%d run.json files recording their end", n), func() bool {
		runDirs = runDirs[:0]
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			d := filepath.Join(dir, e.Name())
			if rec := readRunJSON(t, d); rec.Status != "" && rec.Status != "running" {
				runDirs = append(runDirs, d)
			}
		}
		return len(runDirs) == n
	}, c.out.String)
	c.stop()
	return runDirs
}

// journaledRunID is the platform run id sync.json records for a run
// directory.
func journaledRunID(t *testing.T, runDir string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(runDir, "sync.json"))
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal(raw, &j); err != nil {
		t.Fatal(err)
	}
	return j.RunID
}

// checkSyncedRuns asserts each run directory is on the platform exactly
// once, as its journal names it, completed, with at most maxReplays
// metrics posts replayed each. Any other platform run must be empty: the
// create is not replayable, so a sync killed while a create's answer is on
// its way leaves an orphan, never a run with data twice. It returns the
// number of orphans.
func checkSyncedRuns(t *testing.T, platform *rfttest.Server, runDirs []string, res syncResult, maxReplays int) (orphans int) {
	t.Helper()
	named := map[string]bool{}
	for _, d := range runDirs {
		id := journaledRunID(t, d)
		if named[id] {
			t.Fatalf("two run directories name platform run %s", id)
		}
		named[id] = true
		run, ok := platform.Run(id)
		if !ok {
			t.Fatalf("%s names platform run %s, which does not exist\n%s", d, id, res)
		}
		checkSyncedRun(t, run, d, res, 0, maxReplays)
		if !run.Finalized || run.Status != rfttest.StatusCompleted {
			t.Errorf("run %s (%s) was not closed out: %s", id, d, run.Status)
		}
	}
	for _, run := range platform.Runs() {
		if named[run.ID] {
			continue
		}
		orphans++
		if run.MetricPosts != 0 || len(run.Objects) != 0 {
			t.Errorf("platform run %s is no run directory's, yet holds %d metrics posts and %d objects", run.ID, run.MetricPosts, len(run.Objects))
		}
	}
	return orphans
}

func TestManyRunsSyncedAtOnceLandEveryObjectExactlyOnce(t *testing.T) {
	runDirs := trainOfflineRuns(t, 6, 12)
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey, AllowedTeams: []string{syncTeam}})
	defer platform.Close()

	res := runSync(t, platform, "--parallel-runs", "4", filepath.Dir(runDirs[0]))
	if res.code != 0 {
		t.Fatalf("sync failed:\n%s", res)
	}
	if orphans := checkSyncedRuns(t, platform, runDirs, res, 0); orphans != 0 {
		t.Fatalf("%d runs created for nothing", orphans)
	}
	if lines := strings.Count(res.stdout, "\n"); lines != len(runDirs) {
		t.Errorf("%d summary lines, want one per run:\n%s", lines, res)
	}
	for _, want := range []string{"prime-sync: 6 run(s)", "(6/6 runs ended)"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("the progress over all runs lacks %q:\n%s", want, res)
		}
	}

	// The runs overlapped: some request of one run came between two of
	// another's.
	var order []string
	for _, r := range platform.Requests() {
		var body struct {
			RunID string `json:"run_id"`
		}
		_ = json.Unmarshal(r.Body, &body)
		if body.RunID != "" {
			order = append(order, body.RunID)
		}
	}
	if !interleaved(order) {
		t.Errorf("the runs' requests never interleaved: they were synced one at a time")
	}

	requests := len(platform.Requests())
	again := runSync(t, platform, "--parallel-runs", "4", filepath.Dir(runDirs[0]))
	if again.code != 0 || len(platform.Requests()) != requests {
		t.Fatalf("a second sync sends nothing: %d new requests\n%s", len(platform.Requests())-requests, again)
	}
}

// interleaved says some run's requests are not all together.
func interleaved(runIDs []string) bool {
	seen := map[string]bool{}
	for i, id := range runIDs {
		if i > 0 && runIDs[i-1] != id && seen[id] {
			return true
		}
		seen[id] = true
	}
	return false
}

func TestAParallelSyncKilledWithSeveralRunsInFlightFinishesOnTheNextWithNothingTwice(t *testing.T) {
	runDirs := trainOfflineRuns(t, 6, 20)
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey, AllowedTeams: []string{syncTeam}})
	defer platform.Close()
	// Slow confirms, processed at once and answered late, so that the kill
	// lands while every run in flight has objects confirmed that its
	// journal does not yet know of.
	slow := make([]rfttest.Fault, 24)
	for i := range slow {
		slow[i] = rfttest.Fault{Delay: 2 * time.Second, AfterProcessing: true}
	}
	platform.Inject(rfttest.RouteConfirm, slow...)

	cmd := exec.Command(syncBinary(t), "--parallel-runs", "3", "--parallel", "4", filepath.Dir(runDirs[0]))
	cmd.Env = append(os.Environ(), "PRIME_API_KEY="+e2eKey, "PRIME_API_BASE="+platform.BaseURL()+"/rft")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inFlight := func() (runs int) {
		for _, r := range platform.Runs() {
			if slices.ContainsFunc(r.Objects, func(o rfttest.Object) bool { return o.Confirmed }) && !r.Finalized {
				runs++
			}
		}
		return runs
	}
	eventually(t, "three runs with objects confirmed and not yet closed out", func() bool { return inFlight() >= 3 }, out.String)
	_ = cmd.Process.Kill() // SIGKILL: no journal write after this
	_ = cmd.Wait()
	atKill := platform.Runs()
	confirmedAtKill := 0
	for _, r := range atKill {
		for _, o := range r.Objects {
			if o.Confirmed {
				confirmedAtKill++
			}
		}
	}
	total := 0
	for _, d := range runDirs {
		total += len(offlineObjectNames(t, d))
	}
	if confirmedAtKill >= total {
		t.Fatalf("the kill came after all %d objects: the test proves nothing", total)
	}

	res := runSync(t, platform, "--parallel-runs", "3", filepath.Dir(runDirs[0]))
	if res.code != 0 {
		t.Fatalf("the second sync failed:\n%s\nfirst:\n%s", res, out.String())
	}
	// A metrics post processed but not journaled when the kill came is
	// posted again and merged into its row: at most one a run.
	orphans := checkSyncedRuns(t, platform, runDirs, res, 1)
	t.Logf("killed with %d runs begun and %d of %d objects confirmed; the second sync finished the rest (%d empty orphan run(s) from creates answered after the kill)",
		len(atKill), confirmedAtKill, total, orphans)
}
