package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The trainer users copy from docs/python.md is the file that was recorded
// with the real Python SDK (scripts/record-python-fixture.sh) and whose
// recording TestTheDocsPythonTrainerRecording… replays: the page's first
// python block is cmd/pytrainer/trainer.py byte for byte, and the recording
// names that file's SHA-256.
func TestTheDocsPythonTrainerIsTheFileThatWasRecorded(t *testing.T) {
	trainer, err := os.ReadFile(filepath.Join("..", "cmd", "pytrainer", "trainer.py"))
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join("..", "docs", "python.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(page), "```python\n")
	block, _, closed := strings.Cut(block, "```")
	if !ok || !closed {
		t.Fatal("docs/python.md has no python code block")
	}
	if block != string(trainer) {
		t.Fatal("the trainer in docs/python.md is not cmd/pytrainer/trainer.py: change both, then run bash scripts/record-python-fixture.sh")
	}

	recorded, err := os.ReadFile(filepath.Join(pythonFixtures, "docs-trainer", "trainer.sha256"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(trainer)
	if want := hex.EncodeToString(sum[:]) + "  trainer.py\n"; string(recorded) != want {
		t.Fatalf("the docs-trainer fixtures were recorded from another trainer.py (%q, now %q): run bash scripts/record-python-fixture.sh", recorded, want)
	}
}
