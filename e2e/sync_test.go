package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

// offlineSyncConfig writes runs to a directory, with a team (recorded in
// run.json) and a sample table every other step, so a run has many
// objects to sync.
func offlineSyncConfig(t *testing.T) string {
	t.Helper()
	return collectorConfig(t, "node", collectorParams{
		Offline: true, Team: "${env:PRIME_TEAM:-}", FinalizeGrace: "2s", StepInterval: "2",
		Queue: queueParams{FlushTimeout: "200ms"},
	})
}

const syncTeam = "team-e2e"

func syncBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("PRIME_SYNC")
	if bin == "" {
		t.Fatal("PRIME_SYNC must name the built prime-sync: run bash scripts/test.sh")
	}
	return bin
}

// trainOffline plays a whole run through the offline collector and returns
// its run directory once run.json says it ended.
func trainOffline(t *testing.T, steps int, env []string, trainerArgs ...string) string {
	t.Helper()
	otelcol, trainer := binaries(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	c := startCollector(t, otelcol, offlineSyncConfig(t), append([]string{"PRIME_OTLP_HTTP=" + addr, "PRIME_OFFLINE_DIR=" + dir}, env...)...)
	runTrainer(t, trainer, addr, append([]string{"-steps", itoa(steps), "-step-delay", "2ms", "-run-key", "sync-run"}, trainerArgs...)...)
	runDir := waitEnded(t, dir, c.out.String)
	c.stop()
	return runDir
}

// waitEnded waits for the one run directory under dir to record an end.
func waitEnded(t *testing.T, dir string, dump func() string) string {
	t.Helper()
	var runDir string
	eventually(t, "run.json recording the run's end", func() bool {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			rec := readRunJSON(t, filepath.Join(dir, e.Name()))
			if rec.Status != "" && rec.Status != "running" {
				runDir = filepath.Join(dir, e.Name())
				return true
			}
		}
		return false
	}, dump)
	return runDir
}

type runJSON struct {
	ID           string         `json:"id"`
	Identity     string         `json:"identity"`
	TeamID       string         `json:"team_id"`
	Spec         map[string]any `json:"spec"`
	Status       string         `json:"status"`
	ErrorMessage string         `json:"error_message"`
}

func readRunJSON(t *testing.T, runDir string) runJSON {
	t.Helper()
	var rec runJSON
	raw, err := os.ReadFile(filepath.Join(runDir, "run.json"))
	if err != nil {
		return rec
	}
	// Numbers as the fake keeps them (json.Number), so that a spec compares
	// by its text.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&rec); err != nil {
		t.Fatalf("run.json: %v", err)
	}
	return rec
}

type syncResult struct {
	code           int
	stdout, stderr string
}

func (r syncResult) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// runSync runs prime-sync against the fake platform.
func runSync(t *testing.T, platform *rfttest.Server, args ...string) syncResult {
	t.Helper()
	cmd := exec.Command(syncBinary(t), args...)
	cmd.Env = append(os.Environ(), "PRIME_API_KEY="+e2eKey, "PRIME_API_BASE="+platform.BaseURL()+"/rft", "PRIME_TEAM_ID=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := syncResult{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	if strings.Contains(res.stdout+res.stderr, e2eKey) {
		t.Fatalf("the API key appears in prime-sync's output:\n%s", res)
	}
	return res
}

// offlineMetrics reads metrics.jsonl: step → the merged metrics, the
// time-keyed rows by _timestamp, and the number of posts.
func offlineMetrics(t *testing.T, runDir string) (steps map[int64]map[string]float64, times map[float64]map[string]float64, posts int) {
	t.Helper()
	f, err := os.Open(filepath.Join(runDir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	steps, times = map[int64]map[string]float64{}, map[float64]map[string]float64{}
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var post struct {
			Metrics map[string]float64 `json:"metrics"`
		}
		if err := json.Unmarshal(sc.Bytes(), &post); err != nil {
			t.Fatal(err)
		}
		// A row is a step's, or, with no "step", the row of its
		// _timestamp; neither key is a value of the row.
		var row map[string]float64
		if step, ok := post.Metrics["step"]; ok {
			if steps[int64(step)] == nil {
				steps[int64(step)] = map[string]float64{}
			}
			row = steps[int64(step)]
		} else {
			at := post.Metrics["_timestamp"]
			if times[at] == nil {
				times[at] = map[string]float64{}
			}
			row = times[at]
		}
		for k, v := range post.Metrics {
			if k != "step" && k != "_timestamp" {
				row[k] = v
			}
		}
		posts++
	}
	return steps, times, posts
}

// checkSynced asserts the platform holds exactly what the run directory
// holds, as an online run would have put it there: one run created from
// run.json's spec, every metrics post once, every object once with rows
// equal to the offline file's except run_id, and the close-out. replays
// are metrics posts the test made the platform process without answering:
// the contract replays them, and the platform merges them into their
// step's one row.
func checkSynced(t *testing.T, platform *rfttest.Server, runDir string, res syncResult, replays int) rfttest.Run {
	t.Helper()
	runs := platform.Runs()
	if len(runs) != 1 {
		t.Fatalf("want one run on the platform, got %d\n%s", len(runs), res)
	}
	checkSyncedRun(t, runs[0], runDir, res, replays, replays)
	return runs[0]
}

// checkSyncedRun is checkSynced's assertion on one platform run and its run
// directory, with between minReplays and maxReplays metrics posts
// replayed.
func checkSyncedRun(t *testing.T, run rfttest.Run, runDir string, res syncResult, minReplays, maxReplays int) {
	t.Helper()
	rec := readRunJSON(t, runDir)
	for k, v := range rec.Spec {
		if k == "team_id" && v == "" {
			continue
		}
		if got := fmt.Sprint(run.Spec[k]); got != fmt.Sprint(v) {
			t.Errorf("spec %s = %v, run.json says %v", k, got, v)
		}
	}
	if run.Spec["team_id"] != syncTeam {
		t.Errorf("team_id = %v, want %s", run.Spec["team_id"], syncTeam)
	}

	want, wantTimes, posts := offlineMetrics(t, runDir)
	if run.MetricPosts < posts+minReplays || run.MetricPosts > posts+maxReplays {
		t.Errorf("%d metrics posts accepted, metrics.jsonl has %d lines and %d to %d were replayed", run.MetricPosts, posts, minReplays, maxReplays)
	}
	if fmt.Sprint(run.Metrics) != fmt.Sprint(want) {
		t.Errorf("metrics differ:\nplatform %v\noffline  %v", run.Metrics, want)
	}
	if fmt.Sprint(run.TimeMetrics) != fmt.Sprint(wantTimes) {
		t.Errorf("time-keyed rows differ:\nplatform %v\noffline  %v", run.TimeMetrics, wantTimes)
	}

	files := offlineObjects(t, runDir)
	onPlatform := map[int64][][]byte{}
	for _, o := range run.Objects {
		if !o.Confirmed {
			t.Errorf("object %s of step %d was put but never confirmed", o.Key, o.Step)
		}
		onPlatform[o.Step] = append(onPlatform[o.Step], o.Body)
	}
	if len(files) == 0 {
		t.Fatal("the offline run has no objects: the test proves nothing")
	}
	for step, bodies := range files {
		if len(onPlatform[step]) != len(bodies) {
			t.Errorf("step %d: %d objects on the platform, %d offline", step, len(onPlatform[step]), len(bodies))
			continue
		}
		if got, want := rowsOf(t, onPlatform[step], ""), rowsOf(t, bodies, run.ID); !slices.Equal(got, want) {
			t.Errorf("step %d: rows differ from the offline file's with run_id %s", step, run.ID)
		}
		for _, r := range rowsOf(t, onPlatform[step], "") {
			if !strings.Contains(r, `"run_id":"`+run.ID+`"`) {
				t.Fatalf("step %d: a row keeps another run_id: %s", step, r)
			}
		}
	}
	for step := range onPlatform {
		if files[step] == nil {
			t.Errorf("the platform has objects of step %d, which the offline run has none of", step)
		}
	}
	if !strings.Contains(res.stdout, run.ID) || !strings.Contains(res.stdout, "/dashboard/training/"+run.ID) {
		t.Errorf("the summary names neither the run id nor its dashboard:\n%s", res)
	}
}

// rowsOf renders every row of the objects, sorted, with run_id set to
// runID unless runID is "".
func rowsOf(t *testing.T, bodies [][]byte, runID string) []string {
	t.Helper()
	var out []string
	for _, b := range bodies {
		for _, row := range readTableRows(t, b) {
			if runID != "" {
				row["run_id"] = runID
			}
			j, err := json.Marshal(row)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(j))
		}
	}
	slices.Sort(out)
	return out
}

func TestASyncPutsAnOfflineRunOnThePlatformAsAnOnlineRunWouldHave(t *testing.T) {
	runDir := trainOffline(t, 20, []string{"PRIME_TEAM=" + syncTeam})
	rec := readRunJSON(t, runDir)
	if rec.TeamID != syncTeam || rec.Identity != `prime.run.key="sync-run"` {
		t.Fatalf("run.json records team %q and identity %q", rec.TeamID, rec.Identity)
	}
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey, AllowedTeams: []string{syncTeam}})
	defer platform.Close()

	dry := runSync(t, platform, "--dry-run", filepath.Dir(runDir))
	if dry.code != 0 || len(platform.Requests()) != 0 || !strings.Contains(dry.stdout, "create a run") {
		t.Fatalf("a dry run says what it would send and sends nothing: %d requests\n%s", len(platform.Requests()), dry)
	}

	res := runSync(t, platform, filepath.Dir(runDir))
	if res.code != 0 {
		t.Fatalf("sync failed:\n%s", res)
	}
	run := checkSynced(t, platform, runDir, res, 0)
	if !run.Finalized || run.Status != rfttest.StatusCompleted {
		t.Fatalf("a completed offline run is finalized: %+v\n%s", run.Status, res)
	}

	requests := len(platform.Requests())
	again := runSync(t, platform, runDir)
	if again.code != 0 || len(platform.Requests()) != requests {
		t.Fatalf("a second sync sends nothing: %d new requests\n%s", len(platform.Requests())-requests, again)
	}
}

func TestASyncKilledAfterItsFirstObjectFinishesOnTheNextRunWithNothingTwice(t *testing.T) {
	runDir := trainOffline(t, 20, []string{"PRIME_TEAM=" + syncTeam})
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey, AllowedTeams: []string{syncTeam}})
	defer platform.Close()
	// Slow confirms, so the kill lands while later objects are in flight.
	platform.Inject(rfttest.RouteConfirm,
		rfttest.Fault{Delay: 10 * time.Millisecond, AfterProcessing: true, Status: 0},
		rfttest.Fault{Delay: 2 * time.Second, AfterProcessing: true},
		rfttest.Fault{Delay: 2 * time.Second, AfterProcessing: true},
		rfttest.Fault{Delay: 2 * time.Second, AfterProcessing: true},
		rfttest.Fault{Delay: 2 * time.Second, AfterProcessing: true},
	)

	cmd := exec.Command(syncBinary(t), "--parallel", "4", runDir)
	cmd.Env = append(os.Environ(), "PRIME_API_KEY="+e2eKey, "PRIME_API_BASE="+platform.BaseURL()+"/rft")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first confirmed object", func() bool {
		runs := platform.Runs()
		return len(runs) == 1 && slices.ContainsFunc(runs[0].Objects, func(o rfttest.Object) bool { return o.Confirmed })
	}, out.String)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	confirmedAtKill := 0
	for _, o := range platform.Runs()[0].Objects {
		if o.Confirmed {
			confirmedAtKill++
		}
	}
	if total := len(offlineObjectNames(t, runDir)); confirmedAtKill >= total {
		t.Fatalf("the kill came after all %d objects: the test proves nothing", total)
	}

	res := runSync(t, platform, runDir)
	if res.code != 0 {
		t.Fatalf("the second sync failed:\n%s\nfirst:\n%s", res, out.String())
	}
	run := checkSynced(t, platform, runDir, res, 0)
	if !run.Finalized {
		t.Fatalf("the run was not closed out:\n%s", res)
	}
	t.Logf("killed with %d objects confirmed; the second sync finished the other %d", confirmedAtKill, len(run.Objects)-confirmedAtKill)
}

func offlineObjectNames(t *testing.T, runDir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(runDir, "samples", "step_*.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestASyncUnderInjectedFaultsLandsEverythingExactlyOnce(t *testing.T) {
	runDir := trainOffline(t, 16, []string{"PRIME_TEAM=" + syncTeam})
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey, AllowedTeams: []string{syncTeam}})
	defer platform.Close()
	platform.Inject(rfttest.RouteCreate, rfttest.Fault{Status: 503, RetryAfter: "0"})
	platform.Inject(rfttest.RouteMetrics, rfttest.Fault{Status: 503}, rfttest.Fault{Status: 502, AfterProcessing: true})
	platform.Inject(rfttest.RoutePresign, rfttest.Fault{Status: 503})
	platform.Inject(rfttest.RouteConfirm,
		rfttest.Fault{Status: 504, AfterProcessing: true}, // the answer is lost after the platform confirmed
		rfttest.Fault{DropConnection: true, AfterProcessing: true})
	platform.Inject(rfttest.RouteFinalize, rfttest.Fault{Status: 409})

	res := runSync(t, platform, runDir)
	if res.code != 0 {
		t.Fatalf("sync failed:\n%s", res)
	}
	for _, route := range []rfttest.Route{rfttest.RouteCreate, rfttest.RouteMetrics, rfttest.RoutePresign, rfttest.RouteConfirm, rfttest.RouteFinalize} {
		if n := platform.PendingFaults(route); n != 0 {
			t.Fatalf("%d faults of %s never fired: the test proves less than it says", n, route)
		}
	}
	checkSynced(t, platform, runDir, res, 1)
	if !strings.Contains(res.stdout, "completed") {
		t.Fatalf("a 409 on finalize is the run already closed: a success\n%s", res)
	}
}

func TestAnIncrementalSyncOfALiveRunSendsEachThingOnce(t *testing.T) {
	otelcol, trainer := binaries(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	c := startCollector(t, otelcol, offlineSyncConfig(t), "PRIME_OTLP_HTTP="+addr, "PRIME_OFFLINE_DIR="+dir)
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey, AllowedTeams: []string{syncTeam}})
	defer platform.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	train := exec.CommandContext(ctx, trainer, "-endpoint", addr, "-steps", "30", "-step-delay", "100ms", "-run-key", "live-run")
	var trainOut bytes.Buffer
	train.Stdout, train.Stderr = &trainOut, &trainOut
	if err := train.Start(); err != nil {
		t.Fatal(err)
	}
	var runDir string
	eventually(t, "a few objects of the live run", func() bool {
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 {
			return false
		}
		runDir = filepath.Join(dir, entries[0].Name())
		return len(offlineObjectNames(t, runDir)) >= 3
	}, c.out.String)

	mid := runSync(t, platform, "--team-id", syncTeam, dir)
	if mid.code != 0 || !strings.Contains(mid.stdout, "open") {
		t.Fatalf("a sync mid-run sends what is there and leaves the run open:\n%s", mid)
	}
	runs := platform.Runs()
	if len(runs) != 1 || runs[0].Status != rfttest.StatusRunning || len(runs[0].Objects) == 0 || runs[0].MetricPosts == 0 {
		t.Fatalf("after the mid-run sync: %+v\n%s", runs, mid)
	}
	midObjects, midPosts := len(runs[0].Objects), runs[0].MetricPosts

	if err := train.Wait(); err != nil {
		t.Fatalf("trainer: %v\n%s", err, trainOut.String())
	}
	waitEnded(t, dir, c.out.String)
	c.stop()

	end := runSync(t, platform, "--team-id", syncTeam, dir)
	if end.code != 0 {
		t.Fatalf("the sync after the end failed:\n%s", end)
	}
	run := checkSynced(t, platform, runDir, end, 0)
	if !run.Finalized || len(run.Objects) <= midObjects || run.MetricPosts <= midPosts {
		t.Fatalf("the second sync sent the rest and closed the run: %d → %d objects, %d → %d posts, finalized %v",
			midObjects, len(run.Objects), midPosts, run.MetricPosts, run.Finalized)
	}
}

func TestTwoSyncsOfOneRunNeverBothSend(t *testing.T) {
	runDir := trainOffline(t, 6, []string{"PRIME_TEAM=" + syncTeam})
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey, AllowedTeams: []string{syncTeam}})
	defer platform.Close()
	platform.Inject(rfttest.RouteCreate, rfttest.Fault{Delay: 3 * time.Second, AfterProcessing: true})

	first := exec.Command(syncBinary(t), runDir)
	first.Env = append(os.Environ(), "PRIME_API_KEY="+e2eKey, "PRIME_API_BASE="+platform.BaseURL()+"/rft")
	var out bytes.Buffer
	first.Stdout, first.Stderr = &out, &out
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first sync's create", func() bool { return len(platform.Requests()) > 0 }, out.String)
	second := runSync(t, platform, runDir)
	if second.code != 1 || !strings.Contains(second.stdout+second.stderr, "another prime-sync is syncing") {
		t.Fatalf("the second sync leaves the busy run with a clear message and exit 1:\n%s", second)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("first sync: %v\n%s", err, out.String())
	}
	checkSynced(t, platform, runDir, syncResult{stdout: out.String()}, 0)
}
