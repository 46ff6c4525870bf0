package main

import (
	"encoding/json"
	"os"
)

// writeManifest records what the run sent, for tests that check what landed.
func writeManifest(path string, out outcome) error {
	body, err := json.Marshal(struct {
		Steps           int         `json:"steps"`
		Episodes        int         `json:"episodes"`
		EvalEpisodes    int         `json:"eval_episodes"`
		TrainByDispatch map[int]int `json:"train_episodes_by_dispatch_step"`
	}{out.steps, out.episodes, out.evalEpisodes, out.trainByDispatch})
	if err != nil {
		return err
	}
	return os.WriteFile(path, body, 0o600)
}
