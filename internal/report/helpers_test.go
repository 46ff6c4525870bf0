package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/sampletable"
)

// writeObject writes samples/step_<step>_<rng>.parquet of n episodes with
// the exporter's own encoder; episode i has reward i and prompt
// "p<rng>-<i>".
func writeObject(t *testing.T, runDir string, step, rng int64, n int) {
	t.Helper()
	eps := make([]sampletable.Episode, n)
	for i := range eps {
		reward := float64(i)
		completion := fmt.Sprintf(`[{"role":"assistant","content":"c%d-%d"}]`, rng, i)
		eps[i] = sampletable.Episode{Step: step, Tag: "train", Prompt: fmt.Sprintf("p%d-%d", rng, i), Completion: &completion,
			Trajectory: "[]", Reward: &reward, CreatedAt: time.Unix(1700000000, 0).UTC()}
	}
	var buf bytes.Buffer
	if err := sampletable.NewEncoder().Encode(&buf, "offline-r", step, rng, eps); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(runDir, platform.SamplesDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("step_%d_%d.parquet", step, rng)), buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}
