package rft

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestStampRunPutsThePlatformRunWhereTheServiceReadsIt(t *testing.T) {
	const fresh = `{"id":"P","type":"train"}`
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{"a document without a run gets one, last",
			`{"step":3,"reward":1}`,
			`{"step":3,"reward":1,"run":` + fresh + `}`},
		{"a null run is replaced in place",
			`{"run":null,"step":3}`,
			`{"run":` + fresh + `,"step":3}`},
		{"an empty run counts as none, as the SDK reads it",
			`{"run":{},"step":3}`,
			`{"run":` + fresh + `,"step":3}`},
		{"a run that is not an object is replaced",
			`{"run":"rl-7"}`,
			`{"run":` + fresh + `}`},
		{"a run without id gets it last, its other keys kept",
			`{"run":{"type":"eval","name":"n"}}`,
			`{"run":{"type":"eval","name":"n","id":"P"}}`},
		{"a run with a null id gets the platform id and no trainer id",
			`{"run":{"id":null,"type":"train"}}`,
			`{"run":{"id":"P","type":"train"}}`},
		{"prime-rl's run keeps its type and work, its id moves to trainer_run_id",
			`{"run":{"type":"train","id":"rl-7","work":{"step":7,"rank":0}},"step":7}`,
			`{"run":{"type":"train","id":"P","trainer_run_id":"rl-7","work":{"step":7,"rank":0}},"step":7}`},
		{"a numeric trainer id moves as it was written",
			`{"run":{"id":42}}`,
			`{"run":{"id":"P","trainer_run_id":42}}`},
		{"a run already stamped is left as it is",
			`{"run":{"type":"train","id":"P","trainer_run_id":"rl-7","work":{}}}`,
			`{"run":{"type":"train","id":"P","trainer_run_id":"rl-7","work":{}}}`},
		{"an existing trainer_run_id is not overwritten",
			`{"run":{"id":"other","trainer_run_id":"rl-7"}}`,
			`{"run":{"id":"P","trainer_run_id":"rl-7"}}`},
		{"the platform id spelt with escapes is the same id",
			`{"run":{"id":"\u0050"}}`,
			`{"run":{"id":"P"}}`},
		{"member traces without a run get a copy of the document's",
			`{"run":{"type":"train","id":"rl-7"},"traces":[{"n":1},{"run":null,"n":2},{"run":{},"n":3}]}`,
			`{"run":{"type":"train","id":"P","trainer_run_id":"rl-7"},"traces":[` +
				`{"n":1,"run":{"type":"train","id":"P","trainer_run_id":"rl-7"}},` +
				`{"run":{"type":"train","id":"P","trainer_run_id":"rl-7"},"n":2},` +
				`{"run":{"type":"train","id":"P","trainer_run_id":"rl-7"},"n":3}]}`},
		{"member traces of a document without a run get the fresh one",
			`{"traces":[{"n":1}]}`,
			`{"traces":[{"n":1,"run":` + fresh + `}],"run":` + fresh + `}`},
		{"member traces with their own run are stamped the same way",
			`{"traces":[{"run":{"id":"rl-7","work":{"rank":1}},"n":1}],"run":{"id":"rl-7"}}`,
			`{"traces":[{"run":{"id":"P","trainer_run_id":"rl-7","work":{"rank":1}},"n":1}],"run":{"id":"P","trainer_run_id":"rl-7"}}`},
		{"member traces that are not objects are left",
			`{"traces":[1,null,"x"]}`,
			`{"traces":[1,null,"x"],"run":` + fresh + `}`},
		{"traces that are not a list are left",
			`{"traces":{"run":null}}`,
			`{"traces":{"run":null},"run":` + fresh + `}`},
		{"numbers stay as written",
			`{"run":{"id":"P"},"n":1,"f":1.0,"e":1e3,"big":12345678901234567890,"neg":-0.5}`,
			`{"run":{"id":"P"},"n":1,"f":1.0,"e":1e3,"big":12345678901234567890,"neg":-0.5}`},
		{"keys stay in their order and escapes as written",
			`{"z":1,"a":"<&>\u00e9","m":{"y":1,"b":2},"run":{"id":"P"}}`,
			`{"z":1,"a":"<&>\u00e9","m":{"y":1,"b":2},"run":{"id":"P"}}`},
		{"a key spelt with escapes is still the run",
			`{"\u0072un":{"id":"rl-7"}}`,
			`{"\u0072un":{"id":"P","trainer_run_id":"rl-7"}}`},
		{"strings that look like structure are only strings",
			`{"s":"}{\"run\":1,[","run":{"id":"x\"}"}}`,
			`{"s":"}{\"run\":1,[","run":{"id":"P","trainer_run_id":"x\"}"}}`},
		{"a nested run is not the document's",
			`{"meta":{"run":{"id":"rl-7"}}}`,
			`{"meta":{"run":{"id":"rl-7"}},"run":` + fresh + `}`},
		{"whitespace is compacted",
			" {\n  \"a\" : [ 1 , 2 ] ,\n  \"run\" : { \"id\" : \"P\" }\n}\n",
			`{"a":[1,2],"run":{"id":"P"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.doc)
			got, err := StampRun(in, "P", "train")
			if err != nil {
				t.Fatalf("StampRun: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("\n got  %s\n want %s", got, tt.want)
			}
			if string(in) != tt.doc {
				t.Error("StampRun changed its input")
			}
			again, err := StampRun(got, "P", "train")
			if err != nil || !bytes.Equal(again, got) {
				t.Errorf("stamping twice changed the document: %s (%v)", again, err)
			}
		})
	}
}

func TestStampRunRefusesWhatItCannotStamp(t *testing.T) {
	tests := []struct {
		name, doc, runID, runType, says string
	}{
		{"a list", `[{"run":null}]`, "P", "train", "not a JSON object"},
		{"a number", `1`, "P", "train", "not a JSON object"},
		{"a string", `"{}"`, "P", "train", "not a JSON object"},
		{"null", `null`, "P", "train", "not a JSON object"},
		{"nothing", ``, "P", "train", "not valid JSON"},
		{"a broken object", `{"a":`, "P", "train", "not valid JSON"},
		{"two objects", `{}{}`, "P", "train", "not valid JSON"},
		{"no run id", `{}`, "", "train", "run id is empty"},
		{"no run type", `{}`, "P", "", "run type is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := StampRun([]byte(tt.doc), tt.runID, tt.runType)
			if err == nil || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("got %s, %v; want an error saying %q", got, err, tt.says)
			}
		})
	}
}

// FuzzStampRun checks the scanner against encoding/json: whatever object
// goes in, valid JSON comes out, with the platform id on the document and
// on every member trace that is an object.
func FuzzStampRun(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"run":{"id":"rl-7","work":[1,{"a":"]"}]}}`, `{"traces":[{"run":{"id":1}},{},2]}`,
		`{"s":"\\\"","run":[]}`, `{"run":{"id":"P"},"traces":[{"run":{"\u0069d":"x"}}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var in map[string]any
		if json.Unmarshal(doc, &in) != nil {
			return
		}
		out, err := StampRun(doc, "P", "train")
		if err != nil {
			t.Fatalf("StampRun refused an object: %v", err)
		}
		var got map[string]any // a struct would match keys regardless of case
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("output %s is not JSON: %v", out, err)
		}
		if run, _ := got["run"].(map[string]any); run["id"] != "P" {
			t.Errorf("run = %v in %s", got["run"], out)
		}
		traces, _ := got["traces"].([]any)
		for i, tr := range traces {
			m, ok := tr.(map[string]any)
			if !ok {
				continue
			}
			if run, _ := m["run"].(map[string]any); run["id"] != "P" {
				t.Errorf("traces[%d].run = %v in %s", i, m["run"], out)
			}
		}
	})
}
