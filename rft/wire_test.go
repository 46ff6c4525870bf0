package rft

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCreateRunRequestMatchesTheSpecExample(t *testing.T) {
	req := CreateRunRequest{
		BaseModel: "Qwen/Qwen3-8B", MaxSteps: 100,
		Environments: []Environment{{ID: "primeintellect/vf-math"}, {ID: "env-123", VersionID: "v7"}},
		TeamID:       "team-1",
		Name:         "my-run", BatchSize: 64, RolloutsPerExample: 8, SeqLen: 4096,
		RunConfig:    map[string]any{"trainer": map[string]any{"lr": 1e-6}},
		WandbProject: "p", WandbEntity: "e", WandbRunName: "r",
	}
	got, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, got, `{"base_model": "Qwen/Qwen3-8B", "max_steps": 100,
		"environments": [{"id": "primeintellect/vf-math"}, {"id": "env-123", "version_id": "v7"}],
		"team_id": "team-1",
		"name": "my-run", "batch_size": 64, "rollouts_per_example": 8, "seq_len": 4096,
		"run_config": {"trainer": {"lr": 1e-6}},
		"wandb_project": "p", "wandb_entity": "e", "wandb_run_name": "r"}`)
}

func TestCreateRunRequestAlwaysSendsTheRequiredKeysAndLeavesUnknownOptionalKeysOut(t *testing.T) {
	for _, name := range []string{"value", "pointer"} {
		t.Run(name, func(t *testing.T) {
			req := CreateRunRequest{BaseModel: "m"}
			var got []byte
			var err error
			if name == "value" {
				got, err = json.Marshal(req)
			} else {
				got, err = json.Marshal(&req)
			}
			if err != nil {
				t.Fatal(err)
			}
			// environments is a list even when nil; team_id and max_steps are
			// sent even when empty or 0.
			if string(got) != `{"base_model":"m","max_steps":0,"environments":[],"team_id":""}` {
				t.Errorf("got %s", got)
			}
			if strings.Contains(string(got), "null") {
				t.Errorf("a key was sent as null: %s", got)
			}
		})
	}
}

func TestStatusRequestLeavesAnEmptyErrorMessageOut(t *testing.T) {
	got, err := json.Marshal(statusRequest{Status: StatusCompleted})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"status":"completed"}` {
		t.Errorf("got %s", got)
	}
}

func TestPresignedStringLeavesTheSignatureOut(t *testing.T) {
	p := Presigned{URL: "https://s3.example/b/k.parquet?X-Amz-Signature=SECRETSIG", Key: "k.parquet"}
	if s := p.String(); strings.Contains(s, "SECRETSIG") || !strings.Contains(s, "k.parquet") {
		t.Errorf("String() = %q", s)
	}
}
