package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const hostile = `</script><script>alert(1)</script>`

func TestRunTextCannotEndThePagesScriptOrMarkup(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "run.json"), `{"id":"offline-r","spec":{"name":"`+strings.ReplaceAll(hostile, `"`, `\"`)+`","base_model":"m","max_steps":0,"environments":[],"team_id":""},"status":"failed","error_message":"<b>OOM</b>","created_at":"2026-12-04T10:00:00Z","updated_at":"2026-12-04T10:00:00Z"}`)
	writeFile(t, filepath.Join(dir, "metrics.jsonl"), `{"run_id":"offline-r","metrics":{"step":1,"`+strings.ReplaceAll(hostile, `"`, `\"`)+`":1}}`+"\n")
	path, err := Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(raw)
	if strings.Contains(page, "<script>alert(1)") || strings.Contains(page, "<b>OOM") {
		t.Fatal("run text reached the page as markup")
	}
	// The embedded data is one JSON document holding the metric's name.
	_, rest, _ := strings.Cut(page, `<script type="application/json" id="report-data">`)
	body, _, _ := strings.Cut(rest, "</script>")
	var data pageData
	if err := json.Unmarshal([]byte(body), &data); err != nil {
		t.Fatalf("embedded data: %v", err)
	}
	if len(data.Charts) != 1 || data.Charts[0].Name != hostile {
		t.Fatalf("charts %+v", data.Charts)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("report.html mode %v (%v), want owner-only like the run's files", info.Mode(), err)
	}
}

func TestTheHeaderSaysTheRunsStandingAndWhereItWasSynced(t *testing.T) {
	tests := []struct {
		name, journal string
		synced        bool
		say           string
	}{
		{"never synced", "", false, "Not synced"},
		{"synced and closed", `{"version":1,"endpoint":"https://api.example/api/v1/rft","run_id":"run-42","metrics_posted":12,"objects":{"step_10_0.parquet":{"step":10,"confirmed":true}},"closed_out":"failed"}`,
			true, "Synced to platform run run-42 on https://api.example/api/v1/rft: 12 metrics posts, 1 sample objects confirmed; closed out as failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "run.json"), `{"id":"offline-r","identity":"prime.run.key=\"k\"","spec":{"name":"n","base_model":"Qwen/Qwen3-0.6B","max_steps":30,"environments":[{"id":"primeintellect/gsm8k"},{"id":"vf-math","version_id":"v3"}],"team_id":"","run_config":{"lr":0.001}},"status":"crashed","error_message":"segfault","created_at":"2026-12-04T10:00:00Z","updated_at":"2026-12-04T10:05:00Z"}`)
			if tt.journal != "" {
				writeFile(t, filepath.Join(dir, "sync.json"), tt.journal)
			}
			r, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			h := r.Header
			if h.Kind != KindTrain || h.Status != "crashed" || h.Error != "segfault" || h.Model != "Qwen/Qwen3-0.6B" ||
				strings.Join(h.Environments, ",") != "primeintellect/gsm8k,vf-math@v3" || !strings.Contains(h.Config, `"lr": 0.001`) {
				t.Fatalf("header %+v", h)
			}
			if h.Synced != tt.synced || !strings.HasPrefix(h.Sync, tt.say) {
				t.Fatalf("sync %v %q, want %v %q…", h.Synced, h.Sync, tt.synced, tt.say)
			}
		})
	}
}

func TestAnOfflineEvaluationGivesItsSummaryAndSamples(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "evaluation.json"), `{"id":"offline-eval-1","kind":"eval","spec":{"name":"gsm8k-1","environments":[{"id":"primeintellect/gsm8k"}],"tags":[],"model_name":"m","dataset":"gsm8k"},"summary":{"avg_reward":0.5,"avg_metrics":{"judge":0.9}},"status":"failed","error_message":"judge down","created_at":"2026-12-04T10:00:00Z","updated_at":"2026-12-04T10:00:00Z"}`)
	writeFile(t, filepath.Join(dir, "samples.jsonl"), `{"sample_id":"a","reward":1,"task":"t","prompt":[{"role":"user","content":"hi"}],"completion":"yo"}
{"sample_id":"b","reward":NaN,"prompt":"p"}
not a sample
`)
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Header.Kind != KindEval || r.Header.Error != "judge down" || r.Header.Model != "m" {
		t.Fatalf("header %+v", r.Header)
	}
	e := r.Eval
	if len(e.Summary) != 2 || e.Summary[0] != [2]string{"avg_metrics.judge", "0.9"} || e.Summary[1] != [2]string{"avg_reward", "0.5"} {
		t.Fatalf("summary %v", e.Summary)
	}
	if len(e.Samples) != 2 || e.BadSamples != 1 || e.Samples[0].Prompt != `[{"role":"user","content":"hi"}]` || e.Samples[1].Reward != nil {
		t.Fatalf("samples %+v, %d bad", e.Samples, e.BadSamples)
	}
}

func TestRunDirsFindsRunsAndEvaluationsOneLevelDown(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a", "run.json"), "{}")
	writeFile(t, filepath.Join(root, "b", "evaluation.json"), "{}")
	writeFile(t, filepath.Join(root, "c", "other"), "")
	dirs, err := RunDirs([]string{root})
	if err != nil || len(dirs) != 2 {
		t.Fatalf("dirs %v, %v", dirs, err)
	}
	if _, err := RunDirs([]string{filepath.Join(root, "c")}); err == nil {
		t.Fatal("a directory without runs gave no error")
	}
}
