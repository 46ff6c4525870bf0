package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// Upgrades: today's build goes on with a run from the storage a release
// wrote mid-run (testdata/upgrade/<release>, made by
// upgrade_fixtures_test.go; its README says how). A change of the storage layout keeps these tests green
// or migrates what the release wrote (docs/operations.md, Storage faults).

// upgradeConfigOf is testdata/upgrade/collector.yaml, the config of the
// fixtures' collector and of today's that goes on with them, with the run
// registry of a fixture: file_storage, or the shared registry on Redis (a
// gateway with its queue on a volume).
func upgradeConfigOf(t *testing.T, registry string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "upgrade", "collector.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{
		"file_storage": "    storage: file_storage",
		"redis":        "    shared_registry:\n      redis:\n        endpoint: ${env:REDIS_ENDPOINT}",
	}
	return strings.Replace(string(raw), "    # REGISTRY\n", settings[registry]+"\n", 1)
}

// The fixtures' run: upgradeRun, its steps 1 to upgradeFirstPart delivered
// whole, its steps to upgradeSnapshot with their metrics delivered and
// their episodes waiting in the sending queue (an object pending: presign
// failed); today's build plays it to upgradeLastStep.
const (
	upgradeRun       = "upgrade-run"
	upgradeFirstPart = 10
	upgradeSnapshot  = 14
	upgradeLastStep  = 20
)

// upgradeFixture is fixture.json: what the release's platform had of the
// run when the storage was copied, and what its trainer sent.
type upgradeFixture struct {
	// Release is the commit whose build wrote the storage.
	Release string `json:"release"`
	RunID   string `json:"run_id"`
	// MetricSteps are the steps whose metrics the platform had.
	MetricSteps []int64 `json:"metric_steps"`
	// Rows are the sample ids of the confirmed objects, by step.
	Rows map[string][]int64 `json:"rows"`
	// Sent is the train episodes the trainer dispatched at each step.
	Sent map[string]int64 `json:"sent"`
}

func readUpgradeFixture(t *testing.T, dir string) upgradeFixture {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "fixture.json"))
	if err != nil {
		t.Fatalf("the upgrade fixture is missing (testdata/upgrade/README.md says how it is made): %v", err)
	}
	var fx upgradeFixture
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	return fx
}

// copyDir copies the files of src into a new temporary directory: a test
// never writes into testdata.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	copyFiles(t, src, dst)
	return dst
}

// copyFiles copies the regular files of src into dst.
func copyFiles(t *testing.T, src, dst string) {
	t.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// upgradeReleases are the folders of testdata/upgrade, one per release
// whose storage today's build must read, named by its commit: 60ee5a3
// (a key per delivered episode, with a log of markings) and 39ce4dd (the
// same layout, the release before the per-step delivered sets).
func upgradeReleases(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("testdata", "upgrade"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	if len(out) == 0 {
		t.Fatal("no release's storage under testdata/upgrade (its README says how it is made)")
	}
	return out
}

func TestTodaysBuildGoesOnWithARunFromTheReleasesFileStorage(t *testing.T) {
	otelcol, trainer := binaries(t)
	for _, release := range upgradeReleases(t) {
		t.Run(release, func(t *testing.T) {
			fixture := filepath.Join("testdata", "upgrade", release, "file_storage")
			fx := readUpgradeFixture(t, fixture)
			c := upgradeAndFinish(t, otelcol, trainer, fx, upgradeConfigOf(t, "file_storage"), "PRIME_STORAGE_DIR="+copyDir(t, filepath.Join(fixture, "storage")))
			out := c.out.String()
			if !strings.Contains(out, "Restored runs from storage") {
				fatalf(t, c, "today's build did not restore the release's run")
			}
			if !strings.Contains(out, "Moved the delivered episodes an earlier release stored for prime.run.key=\"upgrade-run\" to the per-step layout") {
				fatalf(t, c, "today's build did not move the release's delivered episodes to the per-step layout")
			}
		})
	}
}

func TestTodaysBuildGoesOnWithARunFromTheReleasesRedis(t *testing.T) {
	otelcol, trainer := binaries(t)
	for _, release := range upgradeReleases(t) {
		t.Run(release, func(t *testing.T) {
			fixture := filepath.Join("testdata", "upgrade", release, "redis")
			fx := readUpgradeFixture(t, fixture)
			// redis-server loads dump.rdb from its directory at start.
			redis := startRedis(t, "", copyDir(t, filepath.Join(fixture, "redis")), false)
			if got := redisCLI(t, redis, "EXISTS", "prime:run:key:"+upgradeRun); !strings.Contains(got, "1") {
				t.Fatalf("the fixture's dump.rdb holds no record of the run (%q): was it made with its keys' expiries removed?", got)
			}
			_ = upgradeAndFinish(t, otelcol, trainer, fx, upgradeConfigOf(t, "redis"),
				"REDIS_ENDPOINT="+redis.addr, "PRIME_STORAGE_DIR="+copyDir(t, filepath.Join(fixture, "storage")))
		})
	}
}

// upgradeAndFinish starts today's collector on a fixture's storage, plays
// the rest of the run and checks that the run is one, whole, and has
// nothing twice, counting what the release's platform had with what this
// one got.
func upgradeAndFinish(t *testing.T, otelcol, trainer string, fx upgradeFixture, config string, env ...string) *collector {
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey})
	defer platform.Close()
	// The platform knows the run the release created.
	platform.AddRun(fx.RunID)
	addr := freeAddr(t)
	c := startCollector(t, otelcol, config,
		append(env, "PRIME_OTLP_HTTP="+addr, "PRIME_API_BASE="+platform.BaseURL(), "PRIME_API_KEY="+e2eKey)...)
	manifest := filepath.Join(t.TempDir(), "last.json")
	runTrainer(t, trainer, addr, "-run-key", upgradeRun, "-run-name", upgradeRun, "-start-step", strconv.Itoa(upgradeSnapshot+1),
		"-steps", strconv.Itoa(upgradeLastStep), "-step-delay", "5ms", "-manifest", manifest)
	eventually(t, "the run's close-out", func() bool {
		r, _ := platform.Run(fx.RunID)
		return r.Status == rfttest.StatusCompleted
	}, c.out.String)
	c.stop()

	if runs := platform.Runs(); len(runs) != 1 {
		fatalf(t, c, "want the release's run alone, got %d runs: a second was created", len(runs))
	}
	for line := range strings.Lines(c.out.String()) {
		if strings.Contains(line, "\twarn\t") || strings.Contains(line, "\terror\t") {
			fatalf(t, c, "today's build warns on the release's storage: %s", line)
		}
	}
	run, _ := platform.Run(fx.RunID)
	sent := fx.Sent
	for step, n := range readManifest(t, manifest).TrainByDispatch {
		sent[step] += n
	}
	for step := int64(1); step <= upgradeLastStep; step++ {
		_, now := run.Metrics[step]["loss"]
		if !now && !slices.Contains(fx.MetricSteps, step) {
			fatalf(t, c, "step %d's metrics are lost", step)
		}
	}
	byStep := map[int64][][]byte{}
	for _, o := range run.Objects {
		if o.Confirmed {
			byStep[o.Step] = append(byStep[o.Step], o.Body)
		}
	}
	for step := int64(2); step <= upgradeLastStep; step += 2 {
		key := strconv.FormatInt(step, 10)
		ids := map[int64]bool{}
		for _, id := range fx.Rows[key] {
			ids[id] = true
		}
		for _, body := range byStep[step] {
			for _, r := range readObject(t, body) {
				if r.runID != fx.RunID || r.step != step {
					fatalf(t, c, "step %d object holds a row of run %q step %d", step, r.runID, r.step)
				}
				if ids[r.sampleID] {
					fatalf(t, c, "step %d: sample_id %d twice (sent before the upgrade and after)", step, r.sampleID)
				}
				ids[r.sampleID] = true
			}
		}
		if int64(len(ids)) != sent[key] {
			fatalf(t, c, "step %d has %d rows across the upgrade, want %d (every train episode dispatched at it, once)", step, len(ids), sent[key])
		}
	}
	return c
}
