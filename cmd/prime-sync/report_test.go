package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportWritesAPageBesideEachRunAndPrintsItsPathWithNoKey(t *testing.T) {
	root := t.TempDir()
	for _, id := range []string{"offline-a", "offline-b"} {
		dir := filepath.Join(root, id)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		rec := `{"id":"` + id + `","status":"completed","created_at":"2026-12-04T10:00:00Z","updated_at":"2026-12-04T10:00:00Z"}`
		if err := os.WriteFile(filepath.Join(dir, "run.json"), []byte(rec), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"report", root}, &stdout, &stderr, env(nil), false)
	if code != exitDone {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	want := filepath.Join(root, "offline-a", "report.html") + "\n" + filepath.Join(root, "offline-b", "report.html") + "\n"
	if stdout.String() != want {
		t.Fatalf("stdout %q, want %q", stdout.String(), want)
	}
	page, err := os.ReadFile(filepath.Join(root, "offline-b", "report.html"))
	if err != nil || !bytes.Contains(page, []byte("offline-b")) {
		t.Fatalf("page of offline-b: %v", err)
	}
}

func TestReportUsageErrorsExit2NamingWhatToFix(t *testing.T) {
	empty := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no path", []string{"report"}, "no PATH given"},
		{"no runs", []string{"report", empty}, "holds no run.json or evaluation.json"},
		{"an unknown flag", []string{"report", "--serve", empty}, "flag provided but not defined: -serve"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr, env(nil), false)
			if code != exitUsage || !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, stderr.String(), tt.want)
			}
		})
	}
}

func TestAReportThatCannotBeMadeIsSaidAndTheOtherRunsStillGetTheirs(t *testing.T) {
	root := t.TempDir()
	for id, rec := range map[string]string{
		"offline-good": `{"id":"offline-good","status":"running","created_at":"2026-12-04T10:00:00Z","updated_at":"2026-12-04T10:00:00Z"}`,
		"offline-bad":  `{"id":`,
	} {
		dir := filepath.Join(root, id)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "run.json"), []byte(rec), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"report", root}, &stdout, &stderr, env(nil), false)
	if code != exitLeft || !strings.Contains(stderr.String(), "offline-bad") || !strings.Contains(stdout.String(), filepath.Join("offline-good", "report.html")) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
}
