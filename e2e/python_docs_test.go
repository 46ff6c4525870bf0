package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The trainers users copy from docs/python.md are the files that were
// recorded with the real Python SDK (scripts/record-python-fixture.sh) and
// whose recordings the replay tests play: each is one of the page's python
// blocks byte for byte. The bare-SDK trainer's recording names its SHA-256
// here; the package's recordings are checked against their sources in
// python_package_test.go.
func TestTheDocsPythonTrainersAreTheFilesThatWereRecorded(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "docs", "python.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := pythonBlocks(string(page))
	for _, file := range []string{"cmd/pytrainer/trainer.py", "python/examples/trainer.py"} {
		src, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(file)))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(blocks, string(src)) {
			t.Errorf("docs/python.md has no python block that is %s: change both, then run bash scripts/record-python-fixture.sh", file)
		}
	}

	trainer, err := os.ReadFile(filepath.Join("..", "cmd", "pytrainer", "trainer.py"))
	if err != nil {
		t.Fatal(err)
	}
	recorded, err := os.ReadFile(filepath.Join(pythonFixtures, "docs-trainer", "trainer.sha256"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(trainer)
	if want := hex.EncodeToString(sum[:]) + "  trainer.py\n"; string(recorded) != want {
		t.Fatalf("the docs-trainer fixtures were recorded from another trainer.py (%q, now %q): run bash scripts/record-python-fixture.sh docs-trainer", recorded, want)
	}
}

// pythonBlocks are the bodies of a Markdown page's ```python blocks.
func pythonBlocks(page string) []string {
	var blocks []string
	for {
		_, rest, ok := strings.Cut(page, "```python\n")
		if !ok {
			return blocks
		}
		block, after, closed := strings.Cut(rest, "```")
		if !closed {
			return blocks
		}
		blocks = append(blocks, block)
		page = after
	}
}
