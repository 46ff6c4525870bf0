package main

import (
	"encoding/json"
	"os"
)

// manifest is what the run sent, for tests that compare it with the
// platform's evaluation.
type manifest struct {
	RunKey string `json:"run_key,omitempty"`
	RunID  string `json:"run_id,omitempty"`
	// RunnerID is the documents' run.id, the runner's own id.
	RunnerID     string   `json:"runner_id"`
	Status       string   `json:"status"`
	Environments []string `json:"environments"`
	Counts       counts   `json:"counts"`
	// Summary holds the user summary keys as sent in prime.metrics (null
	// with -summary=false).
	Summary map[string]any `json:"summary"`
	// Expected holds what the exporter computes over the episodes, as the
	// SDK does: avg_reward over every episode (a failed one scores 0, and
	// every trace is trainable), avg_error the share not ok.
	Expected expected      `json:"expected"`
	Episodes []sentEpisode `json:"episodes"`
}

type counts struct {
	Episodes int `json:"episodes"`
	Failed   int `json:"failed"`
	Examples int `json:"examples"`
	// LogRecords is every record the collector accepted: episodes, the
	// summary event and the end event.
	LogRecords int64 `json:"log_records"`
}

type expected struct {
	AvgReward *float64 `json:"avg_reward"`
	AvgError  *float64 `json:"avg_error"`
}

func newManifest(cfg config, ev evaluation, out outcome, logRecords int64) manifest {
	m := manifest{
		RunKey: cfg.runKey, RunID: cfg.runID, RunnerID: ev.runnerID, Status: out.status,
		Environments: cfg.environments,
		Counts:       counts{Episodes: len(out.sent), LogRecords: logRecords},
		Episodes:     out.sent,
	}
	if m.Episodes == nil {
		m.Episodes = []sentEpisode{}
	}
	examples := map[int]bool{}
	reward := 0.0
	for _, e := range out.sent {
		examples[e.ExampleIdx] = true
		reward += e.Reward
		if !e.OK {
			m.Counts.Failed++
		}
	}
	m.Counts.Examples = len(examples)
	if n := float64(len(out.sent)); n > 0 {
		avgReward, avgError := reward/n, float64(m.Counts.Failed)/n
		m.Expected = expected{AvgReward: &avgReward, AvgError: &avgError}
	}
	if cfg.summary {
		m.Summary = map[string]any{}
		for _, v := range out.summary {
			m.Summary[v.name] = v.value
		}
	}
	return m
}

func writeManifest(path string, m manifest) error {
	body, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(body, '\n'), 0o600)
}
