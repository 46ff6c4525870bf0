package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// namedRuns writes training runs as offline mode does, each with a
// metrics post, and returns their directory.
func namedRuns(t *testing.T, ids ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, id := range ids {
		dir := filepath.Join(root, id)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		rec := `{"id":"` + id + `","spec":{"name":"` + id + `","base_model":"m","max_steps":1,"environments":[],"team_id":"","run_config":{"seed":"` + id + `"}},"status":"completed","created_at":"2026-12-04T10:00:00Z","updated_at":"2026-12-04T10:00:00Z"}`
		for name, body := range map[string]string{"run.json": rec, "metrics.jsonl": `{"metrics":{"step":1,"loss":1}}` + "\n"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

func compare(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"compare"}, args...), &out, &errb, env(nil), false)
	return code, out.String(), errb.String()
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestCompareWritesOnePageWithNoKeyAndPrintsItsPathLast(t *testing.T) {
	root := namedRuns(t, "offline-a", "offline-b")
	out := filepath.Join(t.TempDir(), "runs.html")
	code, stdout, stderr := compare(t, root, "-o", out)
	if code != exitDone || lastLine(stdout) != out {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 0 and %s last", code, stdout, stderr, out)
	}
	if !strings.Contains(stdout, "compared offline-a: "+filepath.Join(root, "offline-a")+"\n") {
		t.Errorf("stdout does not name the runs it compared:\n%s", stdout)
	}
	page, err := os.ReadFile(out)
	if err != nil || !bytes.Contains(page, []byte(`id="compare-data"`)) {
		t.Fatalf("the page: %v", err)
	}
}

func TestCompareTakesItsFlagsBeforeOrAfterThePaths(t *testing.T) {
	root := namedRuns(t, "offline-a", "offline-b", "offline-c")
	out := filepath.Join(t.TempDir(), "c.html")
	code, stdout, stderr := compare(t, filepath.Join(root, "offline-a"), "-o", out, filepath.Join(root, "offline-b"), "-name", "offline-[ab]", root)
	if code != exitDone || lastLine(stdout) != out || strings.Contains(stdout, "offline-c") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s\nwant a and b compared, c left out by -name", code, stdout, stderr)
	}
}

func TestCompareWritesCompareHTMLInTheCurrentDirectoryByDefault(t *testing.T) {
	root := namedRuns(t, "offline-a", "offline-b")
	cwd := t.TempDir()
	t.Chdir(cwd)
	code, stdout, stderr := compare(t, root)
	want := filepath.Join(cwd, "compare.html")
	if code != exitDone || lastLine(stdout) != want {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s\nwant %s last", code, stdout, stderr, want)
	}
	if _, err := os.Stat(want); err != nil {
		t.Fatal(err)
	}
}

func TestCompareNeverWritesOverAFileAndSaysSoBeforeReadingAnyRun(t *testing.T) {
	root := namedRuns(t, "offline-a", "offline-b")
	out := filepath.Join(t.TempDir(), "compare.html")
	if err := os.WriteFile(out, []byte("my notes"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A run whose record cannot be read would be said if the runs were read.
	if err := os.WriteFile(filepath.Join(root, "offline-a", "run.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := compare(t, root, "-o", out)
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, out+" is already there: prime-sync compare never writes over a file: remove it, or name another file with -o") ||
		strings.Contains(stderr, "offline-a") {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	if raw, _ := os.ReadFile(out); string(raw) != "my notes" {
		t.Fatalf("the file was written over: %q", raw)
	}
}

func TestARunThatCannotBeReadIsSaidAndTheOthersStillCompared(t *testing.T) {
	root := namedRuns(t, "offline-a", "offline-b", "offline-c")
	if err := os.WriteFile(filepath.Join(root, "offline-c", "run.json"), []byte(`{"id":`), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "compare.html")
	code, stdout, stderr := compare(t, root, "-o", out)
	if code != exitLeft || lastLine(stdout) != out || !strings.Contains(stderr, "not compared: "+filepath.Join(root, "offline-c")+": run.json") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 1, the page, and offline-c named", code, stdout, stderr)
	}
}

func TestCompareUsageErrorsExit2NamingWhatToFixAndWriteNothing(t *testing.T) {
	two := namedRuns(t, "offline-a", "offline-b")
	mixed := namedRuns(t, "offline-a", "offline-b")
	if err := os.MkdirAll(filepath.Join(mixed, "offline-eval-1"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mixed, "offline-eval-1", "evaluation.json"), []byte(`{"id":"offline-eval-1","kind":"eval","status":"completed"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	notRuns := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no path", nil, "no PATH given"},
		{"one run", []string{filepath.Join(two, "offline-a")}, "compare needs at least two runs: 1 of the 1 run(s) found can be read"},
		{"a directory that is not a run", []string{notRuns}, "holds no run.json or evaluation.json and no run directories"},
		{"a file", []string{filepath.Join(two, "offline-a", "run.json"), two}, "is not a directory"},
		{"train and eval", []string{mixed}, "runs of two kinds: training runs"},
		{"a filter nothing matches", []string{two, "-name", "sweep-*"}, "0 of the 2 run(s) found match name sweep-*"},
		{"a bad kind", []string{two, "-kind", "training"}, `-kind "training": want train or eval`},
		{"a bad date", []string{two, "-since", "yesterday"}, `-since "yesterday": want a date`},
		{"no such directory for the page", []string{two, "-o", filepath.Join(notRuns, "nope", "c.html")}, "its directory"},
		{"an unknown flag", []string{two, "--serve"}, "flag provided but not defined: -serve"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			code, stdout, stderr := compare(t, tt.args...)
			if code != exitUsage || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, stderr, tt.want)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if _, err := os.Stat("compare.html"); err == nil {
				t.Error("a page was written")
			}
		})
	}
}
