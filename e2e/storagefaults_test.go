package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// Storage faults (docs/operations.md, Storage faults): the collector on a
// file_storage directory whose disk fills mid-run, and on one whose stored
// values were damaged.

// mountTmpfs mounts a tmpfs of size (mount's -o size=…) on a fresh
// directory for the test. It fails, never skips: CI runs as root.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mounting a %s tmpfs on %s: %v: %s\nthe disk-full test fills a real file system; run it as root (CI does), or with CAP_SYS_ADMIN", size, dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fillDisk writes a file into dir until the file system has no space
// left, and returns the bytes written.
func fillDisk(t *testing.T, dir string) int64 {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := bytes.Repeat([]byte{0x5a}, 64<<10)
	var n int64
	for {
		w, err := f.Write(chunk)
		n += int64(w)
		if errors.Is(err, syscall.ENOSPC) {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// probeReceiver posts one OTLP/HTTP metrics request of a kind the exporter skips
// (it creates no run) and returns the receiver's status code. The request
// carries a 2 MiB attribute: a full disk refuses what needs room, while a
// small request may still fit in pages the queue's file freed as it
// drained (bbolt reuses them), and is rightly taken.
func probeReceiver(addr string) (int, error) {
	body := fmt.Sprintf(`{"resourceMetrics":[{"resource":{"attributes":[`+
		`{"key":"prime.run.key","value":{"stringValue":"probe"}},{"key":"prime.run.kind","value":{"stringValue":"probe"}},`+
		`{"key":"padding","value":{"stringValue":"%s"}}]},`+
		`"scopeMetrics":[{"metrics":[{"name":"probe","gauge":{"dataPoints":[{"asDouble":1,"timeUnixNano":"%d"}]}}]}]}]}`,
		strings.Repeat("p", 2<<20), time.Now().UnixNano())
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Post("http://"+addr+"/v1/metrics", "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func TestAFullDiskRefusesDataAtTheReceiverAndLosesNothingOnceSpaceIsFreed(t *testing.T) {
	otelcol, trainer := binaries(t)
	dir := mountTmpfs(t, "16m")
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey})
	defer platform.Close()
	addr := freeAddr(t)
	c := startCollector(t, otelcol, persistentConfig(t),
		"PRIME_OTLP_HTTP="+addr, "PRIME_API_BASE="+platform.BaseURL(), "PRIME_API_KEY="+e2eKey, "PRIME_STORAGE_DIR="+dir)

	manifest := filepath.Join(t.TempDir(), "manifest.json")
	trained := make(chan error, 1)
	go func() {
		// The trainer flushes every step and retries what the receiver
		// refuses, within its export timeout.
		out, err := exec.Command(trainer, "-endpoint", addr, "-run-key", "disk-full", "-steps", "40", "-step-delay", "150ms",
			"-episode-text-bytes", "4000", "-export-timeout", "60s", "-manifest", manifest).CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%w: %s", err, out)
		}
		trained <- err
	}()
	eventually(t, "the first objects of the run", func() bool {
		runs := platform.Runs()
		return len(runs) == 1 && len(runs[0].Objects) >= 2
	}, c.out.String)

	// The platform stalls a moment, so that the queue holds data when the
	// disk fills: a full disk then refuses the writes that grow a file.
	platform.SetOutage(&rfttest.Fault{Status: http.StatusServiceUnavailable})
	time.Sleep(time.Second)
	filled := fillDisk(t, dir)
	t.Logf("filled the disk with %d bytes", filled)
	time.Sleep(time.Second)
	platform.SetOutage(nil)
	var refused []int
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(c.out.String(), "Storage does not take the run registry's writes") || len(refused) == 0 {
		if time.Now().After(deadline) {
			fatalf(t, c, "within 30 s of a full disk: refusals at the receiver %v, and the exporter's line: %v", refused,
				strings.Contains(c.out.String(), "Storage does not take the run registry's writes"))
		}
		if code, err := probeReceiver(addr); err == nil && code != http.StatusOK {
			refused = append(refused, code)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("the receiver answered %v while the disk was full", refused)
	line := lineWith(c.out.String(), "Storage does not take the run registry's writes")
	if !strings.Contains(line, `"directory": "`+dir+`"`) {
		fatalf(t, c, "the line does not name the directory %s: %s", dir, line)
	}
	t.Logf("the exporter said: %s", line)
	time.Sleep(3 * time.Second) // a while on a full disk

	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-trained:
		if err != nil {
			fatalf(t, c, "the trainer failed: %v", err)
		}
	case <-time.After(60 * time.Second):
		fatalf(t, c, "the trainer did not finish within 60 s of the space coming back")
	}
	eventually(t, "the run's close-out", func() bool {
		runs := platform.Runs()
		return len(runs) == 1 && runs[0].Status == rfttest.StatusCompleted
	}, c.out.String)
	eventually(t, "the line that storage takes writes again", func() bool {
		return strings.Contains(c.out.String(), "Storage takes the run registry's writes again")
	}, c.out.String)
	c.stop()
	t.Logf("the sending queue's own lines: %d requests refused (Exporting failed. Rejecting data.); the exporter's: %d queues kept their progress in memory",
		strings.Count(c.out.String(), "Exporting failed. Rejecting data."), strings.Count(c.out.String(), "Storage refuses the sending queue's writes"))
	// The queue alone drops a request it reads from a full disk, and says
	// so only in this line (internal/queuestore).
	if n := strings.Count(c.out.String(), "Error deleting item from queue"); n > 0 {
		fatalf(t, c, "the sending queue failed to record %d requests' progress on the full disk", n)
	}

	runs := platform.Runs()
	if len(runs) != 1 {
		fatalf(t, c, "want one run, got %d", len(runs))
	}
	run := runs[0]
	for step := int64(1); step <= 40; step++ {
		if _, ok := run.Metrics[step]["loss"]; !ok {
			fatalf(t, c, "step %d's metrics are missing", step)
		}
	}
	sent := readManifest(t, manifest)
	byStep := map[int64][][]byte{}
	for _, o := range run.Objects {
		if o.Confirmed {
			byStep[o.Step] = append(byStep[o.Step], o.Body)
		}
	}
	for step := int64(2); step <= 40; step += 2 {
		checkStepRows(t, run.ID, step, byStep[step], sent.TrainByDispatch[strconv.FormatInt(step, 10)])
	}
}

// lineWith is the first line of out that contains s.
func lineWith(out, s string) string {
	for line := range strings.Lines(out) {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}

// patchBolt rewrites the value of key in the bbolt file at path in place,
// as a disk's damage would, with no library: every leaf element of the key
// (the live one and any stale copy in a freed page) gets f's value, which
// may be shorter (a truncation: the element's value size shrinks) but not
// longer. bbolt keeps no checksum of its data pages, so it reads what is
// there. Layout (bbolt's page.go): a page is a 16-byte header (id u64,
// flags u16, count u16, overflow u32), then count 16-byte leaf elements
// (flags, pos, ksize, vsize, u32 each) whose key and value lie pos bytes
// after the element; a small bucket lies inline in its parent's value, a
// 16-byte bucket header before its own page.
func patchBolt(t *testing.T, path, key string, f func([]byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := func(off, n int) uint64 {
		var v uint64
		for i := n - 1; i >= 0; i-- {
			v = v<<8 | uint64(data[off+i])
		}
		return v
	}
	put32 := func(off int, v uint32) {
		for i := range 4 {
			data[off+i] = byte(v >> (8 * i))
		}
	}
	const leafPage, bucketLeaf = 0x02, 0x01
	patched := 0
	var leaf func(page int)
	leaf = func(page int) {
		count := int(le(page+10, 2))
		for i := range count {
			elem := page + 16 + 16*i
			if elem+16 > len(data) {
				return
			}
			flags, pos, ksize, vsize := le(elem, 4), int(le(elem+4, 4)), int(le(elem+8, 4)), int(le(elem+12, 4))
			k := elem + pos
			if k+ksize+vsize > len(data) {
				return
			}
			v := k + ksize
			switch {
			case flags&bucketLeaf != 0 && vsize > 32 && le(v, 8) == 0:
				leaf(v + 16) // an inline bucket
			case flags&bucketLeaf == 0 && string(data[k:k+ksize]) == key:
				value := f(bytes.Clone(data[v : v+vsize]))
				if len(value) > vsize {
					t.Fatalf("patchBolt: a value can only shrink (%q)", key)
				}
				copy(data[v:], value)
				put32(elem+12, uint32(len(value)))
				patched++
			}
		}
	}
	pageSize := int(le(24, 4)) // the meta page's pageSize
	for page := 0; page+16 <= len(data); page += pageSize {
		if int(le(page, 8)) == page/pageSize && le(page+8, 2) == leafPage {
			leaf(page)
		}
	}
	if patched == 0 {
		t.Fatalf("patchBolt: no key %q in %s", key, path)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// truncateAt cuts a value just after the first mark.
func truncateAt(mark string) func([]byte) []byte {
	return func(v []byte) []byte {
		i := bytes.Index(v, []byte(mark))
		if i < 0 {
			panic(fmt.Sprintf("no %q in %q", mark, v))
		}
		return v[:i+len(mark)]
	}
}

// garbleAt overwrites the first mark with bytes that are no JSON.
func garbleAt(mark string) func([]byte) []byte {
	return func(v []byte) []byte {
		i := bytes.Index(v, []byte(mark))
		if i < 0 {
			panic(fmt.Sprintf("no %q in %q", mark, v))
		}
		copy(v[i:], bytes.Repeat([]byte{0xff}, len(mark)))
		return v
	}
}

func TestACollectorStartsOnDamagedStorageAndRecoversOrLeavesOutEachRunWithOneLine(t *testing.T) {
	otelcol, trainer := binaries(t)
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey})
	defer platform.Close()
	addr, storage, dir := freeAddr(t), t.TempDir(), t.TempDir()
	env := []string{"PRIME_OTLP_HTTP=" + addr, "PRIME_API_BASE=" + platform.BaseURL(), "PRIME_API_KEY=" + e2eKey, "PRIME_STORAGE_DIR=" + storage}
	// Three runs, each left open at step 6.
	keys := []string{"cut-tail", "garbled", "stepindex"}
	first := startCollector(t, otelcol, persistentConfig(t), env...)
	for _, key := range keys {
		runTrainer(t, trainer, addr, "-run-key", key, "-run-name", key, "-steps", "6", "-status", "none", "-step-delay", "5ms",
			"-manifest", filepath.Join(dir, key+"-1.json"))
	}
	eventually(t, "the runs' first six steps", func() bool {
		byName := runsByName(platform)
		for _, key := range keys {
			if len(byName[key]) != 1 || len(byName[key][0].Objects) < 3 {
				return false
			}
		}
		return true
	}, first.out.String)
	first.stop()

	// The damage, written into the bbolt file as a disk would.
	runsFile := filepath.Join(storage, "exporter_prime__runs")
	patchBolt(t, runsFile, "runs", func(v []byte) []byte { return v[:len(v)-3] })
	patchBolt(t, runsFile, "run/key\x00cut-tail", truncateAt(`"ranges_from":`))
	patchBolt(t, runsFile, "run/key\x00garbled", garbleAt(`"team"`))
	patchBolt(t, runsFile, "deliveredsteps/key\x00stepindex", func(v []byte) []byte { v[len(v)-1] ^= 0xff; return v })

	second := startCollector(t, otelcol, persistentConfig(t), env...)
	for _, key := range keys {
		runTrainer(t, trainer, addr, "-run-key", key, "-run-name", key, "-steps", "12", "-start-step", "7", "-step-delay", "5ms",
			"-manifest", filepath.Join(dir, key+"-2.json"))
	}
	eventually(t, "the runs' close-outs", func() bool {
		completed := 0
		for _, r := range platform.Runs() {
			if r.Status == rfttest.StatusCompleted {
				completed++
			}
		}
		return completed == 3
	}, second.out.String)
	second.stop()

	byName := runsByName(platform)
	out := second.out.String()
	wantLines := []string{
		`The run index in storage is damaged (truncated JSON): rebuilt from the run records in storage; no run is lost`,
		`Run record of prime.run.key="cut-tail" is damaged (truncated JSON): the run goes on as run ` + byName["cut-tail"][0].ID +
			`; lost: its sample_id ranges (its next objects take random ranges above every counted one)`,
		`Run record of prime.run.key="garbled" is damaged (garbled JSON at byte`,
		`the run is left out, and its next data creates it again (a second run on the platform)`,
		`Delivered index of prime.run.key="stepindex" in storage is damaged (checksum mismatch: truncated or altered): rebuilt from its`,
		`parts in storage; nothing is lost`,
	}
	for _, want := range wantLines {
		if n := strings.Count(out, want); n != 1 {
			fatalf(t, second, "want one line with %q, got %d", want, n)
		}
	}
	var problems []string
	for line := range strings.Lines(out) {
		if strings.Contains(line, "\twarn\t") || strings.Contains(line, "\terror\t") {
			problems = append(problems, line)
			t.Logf("said: %s", line[strings.Index(line, "\t")+1:strings.Index(line, "{")])
		}
	}
	if len(problems) != 4 {
		fatalf(t, second, "want the 4 damage lines alone as warnings or errors, got %d", len(problems))
	}

	for _, key := range []string{"cut-tail", "stepindex"} {
		if len(byName[key]) != 1 {
			fatalf(t, second, "%s: want one run across the damage, got %d", key, len(byName[key]))
		}
		checkRun(t, second, byName[key][0], 1, 12, filepath.Join(dir, key+"-1.json"), filepath.Join(dir, key+"-2.json"))
	}
	// The run left out: its later data made a second run, whole from step 7.
	if len(byName["garbled"]) != 2 {
		fatalf(t, second, "garbled: want the run left out and a second one, got %d runs", len(byName["garbled"]))
	}
	checkRun(t, second, byName["garbled"][1], 7, 12, filepath.Join(dir, "garbled-2.json"))

	// The damage was repaired or set aside: the next start says nothing.
	third := startCollector(t, otelcol, persistentConfig(t), env...)
	time.Sleep(500 * time.Millisecond)
	third.stop()
	for line := range strings.Lines(third.out.String()) {
		if strings.Contains(line, "\twarn\t") || strings.Contains(line, "\terror\t") {
			fatalf(t, third, "the start after the repair warns: %s", line)
		}
	}
}

// checkRun asserts steps from..to of a run: every step's metrics, and
// every train episode the manifests say was dispatched at a cadence step,
// once, with unique sample ids.
func checkRun(t *testing.T, c *collector, run rfttest.Run, from, to int64, manifests ...string) {
	t.Helper()
	sent := map[string]int64{}
	for _, m := range manifests {
		for step, n := range readManifest(t, m).TrainByDispatch {
			sent[step] += n
		}
	}
	byStep := map[int64][][]byte{}
	for _, o := range run.Objects {
		if o.Confirmed {
			byStep[o.Step] = append(byStep[o.Step], o.Body)
		}
	}
	for step := from; step <= to; step++ {
		if _, ok := run.Metrics[step]["loss"]; !ok {
			fatalf(t, c, "run %s: step %d's metrics are missing", run.ID, step)
		}
		if step%2 == 0 {
			checkStepRows(t, run.ID, step, byStep[step], sent[strconv.FormatInt(step, 10)])
		}
	}
}
