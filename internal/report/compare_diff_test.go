package report

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// configs decodes JSON configs as readJSON does, numbers as written.
func configs(t *testing.T, docs ...string) []map[string]any {
	t.Helper()
	out := make([]map[string]any, len(docs))
	for i, d := range docs {
		dec := json.NewDecoder(strings.NewReader(d))
		dec.UseNumber()
		if err := dec.Decode(&out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func keysOf(rows []DiffRow, differing bool) []string {
	var out []string
	for _, r := range rows {
		if !differing || r.Differs {
			out = append(out, r.Key)
		}
	}
	return out
}

func value(r DiffRow, run int) string {
	if v := r.Values[run]; v != nil {
		return *v
	}
	return "<missing>"
}

func TestNestedConfigKeysAreFlattenedByTheirPathAndListsStayOneValue(t *testing.T) {
	rows := diffConfigs(configs(t,
		`{"seed":1,"trainer":{"lr":1e-6,"optimizer":{"name":"adamw","betas":[0.9,0.95]}},"envs":["a","b"],"extra":{}}`,
		`{"seed":1,"trainer":{"lr":1e-6,"optimizer":{"name":"adamw","betas":[0.9,0.95]}},"envs":["a","b"],"extra":{}}`))
	want := []string{"envs", "extra", "seed", "trainer.lr", "trainer.optimizer.betas", "trainer.optimizer.name"}
	if got := keysOf(rows, false); !slices.Equal(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
	got := map[string]string{}
	for _, r := range rows {
		got[r.Key] = value(r, 0)
	}
	for k, v := range map[string]string{"envs": `["a","b"]`, "extra": "{}", "trainer.lr": "1e-06", "trainer.optimizer.name": `"adamw"`} {
		if got[k] != v {
			t.Errorf("%s = %s, want %s", k, got[k], v)
		}
	}
	if d := keysOf(rows, true); len(d) != 0 {
		t.Errorf("equal configs differ in %v", d)
	}
}

func TestAKeyOneRunLacksIsADifferenceAndShowsAsMissing(t *testing.T) {
	rows := diffConfigs(configs(t, `{"lr":0.1,"warmup":10}`, `{"lr":0.1}`, `{"lr":0.1,"warmup":10}`))
	if d := keysOf(rows, true); !slices.Equal(d, []string{"warmup"}) {
		t.Fatalf("differing keys %v, want warmup alone", d)
	}
	w := rows[slices.IndexFunc(rows, func(r DiffRow) bool { return r.Key == "warmup" })]
	if value(w, 0) != "10" || w.Values[1] != nil || value(w, 2) != "10" {
		t.Fatalf("warmup across the runs: %s, %s, %s", value(w, 0), value(w, 1), value(w, 2))
	}
	// A run with no config at all lacks every key.
	rows = diffConfigs([]map[string]any{configs(t, `{"lr":0.1}`)[0], nil})
	if d := keysOf(rows, true); !slices.Equal(d, []string{"lr"}) {
		t.Fatalf("against a run without a config, differing keys %v, want lr", d)
	}
}

func TestOnlyTheKeysWhoseValuesDifferAreMarkedAndTheSwitchListsThemAll(t *testing.T) {
	rows := diffConfigs(configs(t,
		`{"seed":1,"trainer":{"lr":1e-6,"batch_size":4},"model":"q"}`,
		`{"seed":2,"trainer":{"lr":0.000001,"batch_size":8},"model":"q"}`,
		`{"seed":3,"trainer":{"lr":1E-6,"batch_size":4},"model":"q"}`))
	// 1e-6 written three ways is one value.
	if d := keysOf(rows, true); !slices.Equal(d, []string{"seed", "trainer.batch_size"}) {
		t.Fatalf("differing keys %v, want seed and trainer.batch_size", d)
	}
	if all := keysOf(rows, false); !slices.Equal(all, []string{"model", "seed", "trainer.batch_size", "trainer.lr"}) {
		t.Fatalf("all keys %v", all)
	}
}

func TestTextThatReadsAsANumberIsNotTheNumberAndBigIntegersKeepTheirDigits(t *testing.T) {
	rows := diffConfigs(configs(t, `{"a":"1","seed":9223372036854775807}`, `{"a":1,"seed":9223372036854775806}`))
	if d := keysOf(rows, true); !slices.Equal(d, []string{"a", "seed"}) {
		t.Fatalf("differing keys %v, want a (text against number) and seed (two int64s a float64 cannot tell apart)", d)
	}
	if value(rows[0], 0) != `"1"` || value(rows[1], 0) != "9223372036854775807" {
		t.Fatalf("values %s and %s", value(rows[0], 0), value(rows[1], 0))
	}
}

func TestConfigKeysAreInNaturalOrder(t *testing.T) {
	rows := diffConfigs(configs(t, `{"layer10":1,"layer2":1,"b":1,"a":{"z":1}}`))
	if got := keysOf(rows, false); !slices.Equal(got, []string{"a.z", "b", "layer2", "layer10"}) {
		t.Fatalf("keys %v", got)
	}
}

func TestTheHeadersSideBySideMarkWhatDiffersAndLeaveOutWhatNoRunHas(t *testing.T) {
	a := Header{Title: "a", ID: "offline-a", Status: "completed", Model: "m", Environments: []string{"e1"},
		Fields: [][2]string{{"Max steps", "30"}, {"Batch size", "4"}}, Created: "2026-12-04 10:00:00 UTC", Sync: "Not synced"}
	b := a
	b.Title, b.ID, b.Fields, b.Synced, b.Sync = "b", "offline-b", [][2]string{{"Max steps", "30"}, {"Batch size", "8"}, {"Sequence length", "2048"}}, true, "Synced to run-1"
	rows := headerRows([]Header{a, b})
	got := map[string]bool{}
	for _, r := range rows {
		got[r.Key] = r.Differs
	}
	want := map[string]bool{"Name": true, "Run id": true, "Status": false, "Model": false, "Environments": false, "Max steps": false,
		"Batch size": true, "Sequence length": true, "Created": false, "Synced": true, "Platform": true}
	for k, d := range want {
		if v, ok := got[k]; !ok || v != d {
			t.Errorf("row %s: present %v, differs %v; want differs %v", k, ok, v, d)
		}
	}
	for _, k := range []string{"Error", "Exit code", "Finished", "Identity"} {
		if _, ok := got[k]; ok {
			t.Errorf("row %s is shown, though no run has it", k)
		}
	}
}
