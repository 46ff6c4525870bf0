//go:build upgradefixtures

package e2e

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// TestMakeUpgradeFixtures writes testdata/upgrade/<release> from a
// release's build (PRIME_OTELCOL, PRIME_DEMOTRAINER; PRIME_RELEASE names its
// commit, the folder its first 7 characters): the storage of a collector
// stopped mid-run, for the upgrade tests. Run it as
// testdata/upgrade/README.md says, and commit what it writes.
func TestMakeUpgradeFixtures(t *testing.T) {
	otelcol, trainer := binaries(t)
	release := os.Getenv("PRIME_RELEASE")
	if release == "" {
		t.Fatal("PRIME_RELEASE must name the commit the binaries were built from")
	}
	if len(release) < 7 {
		t.Fatalf("PRIME_RELEASE %q is not a commit", release)
	}
	out := filepath.Join("testdata", "upgrade", release[:7])
	t.Run("file_storage", func(t *testing.T) {
		storage := t.TempDir()
		fx := stopMidRun(t, otelcol, trainer, upgradeConfigOf(t, "file_storage"), "PRIME_STORAGE_DIR="+storage)
		fx.Release = release
		writeFixture(t, filepath.Join(out, "file_storage"), fx, map[string]string{"storage": storage})
	})
	t.Run("redis", func(t *testing.T) {
		storage, redisDir := t.TempDir(), t.TempDir()
		redis := startRedis(t, "", redisDir, false)
		fx := stopMidRun(t, otelcol, trainer, upgradeConfigOf(t, "redis"), "PRIME_STORAGE_DIR="+storage, "REDIS_ENDPOINT="+redis.addr)
		fx.Release = release
		// A dump keeps each key's expiry as a time: a committed fixture
		// would lose its pending uploads and delivered episodes after 7
		// days, its record after 30. The run's keys are kept without
		// expiry; the stopped collector's heartbeat goes, as it would 15 s
		// after the stop.
		redisCLI(t, redis, "EVAL", `
for _, k in ipairs(redis.call('KEYS', 'prime:*')) do
  if string.find(k, '^prime:alive:') then redis.call('DEL', k) else redis.call('PERSIST', k) end
end
return 0`, "0")
		redisCLI(t, redis, "SAVE")
		redis.stop()
		writeFixture(t, filepath.Join(out, "redis"), fx, map[string]string{"storage": storage, "redis": redisDir})
	})
}

// stopMidRun plays the fixtures' run on a collector and stops it (SIGTERM,
// as a rolling upgrade does) with steps 1-10 delivered, the metrics of
// 11-14 delivered, and their episodes in the sending queue, one batch:
// step 12's object confirmed (its episodes marked delivered), step 14's
// behind a failed presign (an object pending with its sample_id range).
func stopMidRun(t *testing.T, otelcol, trainer, config string, env ...string) upgradeFixture {
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey})
	defer platform.Close()
	addr := freeAddr(t)
	c := startCollector(t, otelcol, config, append(env, "PRIME_OTLP_HTTP="+addr, "PRIME_API_BASE="+platform.BaseURL(), "PRIME_API_KEY="+e2eKey)...)
	dir := t.TempDir()
	play := func(name string, from, to int) manifest {
		path := filepath.Join(dir, name)
		runTrainer(t, trainer, addr, "-run-key", upgradeRun, "-run-name", upgradeRun, "-start-step", strconv.Itoa(from),
			"-steps", strconv.Itoa(to), "-status", "none", "-step-delay", "5ms", "-episode-text-bytes", "200", "-manifest", path)
		return readManifest(t, path)
	}
	first := play("first.json", 1, upgradeFirstPart)
	eventually(t, "steps 1-10 delivered", func() bool {
		runs := platform.Runs()
		return len(runs) == 1 && len(runs[0].Metrics) >= upgradeFirstPart && len(runs[0].Objects) >= upgradeFirstPart/2
	}, c.out.String)

	// Step 12's presign goes through, step 14's fails until the stop.
	const faults = 1000
	platform.Inject(rfttest.RoutePresign, rfttest.Fault{})
	for range faults {
		platform.Inject(rfttest.RoutePresign, rfttest.Fault{Status: 503})
	}
	second := play("second.json", upgradeFirstPart+1, upgradeSnapshot)
	confirmed := func() map[int64]int {
		steps := map[int64]int{}
		for _, o := range platform.Runs()[0].Objects {
			if o.Confirmed {
				steps[o.Step]++
			}
		}
		return steps
	}
	eventually(t, "steps 11-14's metrics delivered, step 12's object confirmed, step 14's behind a failed presign", func() bool {
		return len(platform.Runs()[0].Metrics) >= upgradeSnapshot && confirmed()[12] == 1 && platform.PendingFaults(rfttest.RoutePresign) < faults-1
	}, c.out.String)
	c.stop()
	if steps := confirmed(); steps[12] != 1 || steps[14] != 0 {
		t.Fatalf("want step 12's object confirmed and step 14's not, got %v: play again", steps)
	}
	run := platform.Runs()[0]
	fx := upgradeFixture{RunID: run.ID, Rows: map[string][]int64{}, Sent: map[string]int64{}}
	fx.MetricSteps = slices.Sorted(maps.Keys(run.Metrics))
	for _, o := range run.Objects {
		if !o.Confirmed {
			continue
		}
		key := strconv.FormatInt(o.Step, 10)
		for _, r := range readObject(t, o.Body) {
			fx.Rows[key] = append(fx.Rows[key], r.sampleID)
		}
	}
	for _, m := range []manifest{first, second} {
		for step, n := range m.TrainByDispatch {
			fx.Sent[step] += n
		}
	}
	return fx
}

// writeFixture replaces dir with fixture.json and a copy of each named
// directory's files.
func writeFixture(t *testing.T, dir string, fx upgradeFixture, dirs map[string]string) {
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	for name, src := range dirs {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		copyFiles(t, src, filepath.Join(dir, name))
	}
	raw, err := json.MarshalIndent(fx, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fixture.json"), append(raw, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s: run %s, metrics of steps %v, rows of steps %v", dir, fx.RunID, fx.MetricSteps, slices.Sorted(maps.Keys(fx.Rows)))
}
