package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// manifest is what the demo trainer says it sent (its -manifest file).
type manifest struct {
	Steps           int              `json:"steps"`
	Episodes        int              `json:"episodes"`
	EvalEpisodes    int              `json:"eval_episodes"`
	TrainByDispatch map[string]int64 `json:"train_episodes_by_dispatch_step"`
}

func readManifest(t *testing.T, path string) manifest {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// The viewer's table, as an independent reader (parquet-go, not the arrow-go
// that wrote it) sees it: name, physical type, repetition, logical type.
var wantColumns = []string{
	"run_id BYTE_ARRAY OPTIONAL STRING",
	"step INT64 OPTIONAL INT(64,true)",
	"tag BYTE_ARRAY OPTIONAL STRING",
	"problem_id INT64 OPTIONAL INT(64,true)",
	"sample_id INT64 OPTIONAL INT(64,true)",
	"prompt BYTE_ARRAY OPTIONAL STRING",
	"completion BYTE_ARRAY OPTIONAL STRING",
	"trajectory BYTE_ARRAY OPTIONAL STRING",
	"answer BYTE_ARRAY OPTIONAL STRING",
	"env_name BYTE_ARRAY OPTIONAL STRING",
	"task BYTE_ARRAY OPTIONAL STRING",
	"info BYTE_ARRAY OPTIONAL STRING",
	"reward DOUBLE OPTIONAL -",
	"advantage DOUBLE OPTIONAL -",
	"metrics BYTE_ARRAY OPTIONAL STRING",
	"timing BYTE_ARRAY OPTIONAL STRING",
	"num_input_tokens INT64 OPTIONAL INT(64,true)",
	"num_output_tokens INT64 OPTIONAL INT(64,true)",
	"created_at INT64 OPTIONAL TIMESTAMP(isAdjustedToUTC=true,unit=MICROS)",
}

// sampleRow is the part of a row the end-to-end tests check.
type sampleRow struct {
	runID        string
	step         int64
	sampleID     int64
	task, prompt string
}

// readObject checks one object's schema and compression and returns its
// rows.
func readObject(t *testing.T, body []byte) []sampleRow {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatalf("parquet-go cannot open the object: %v", err)
	}
	elems := f.Metadata().Schema[1:]
	if len(elems) != len(wantColumns) {
		t.Fatalf("%d columns, want %d", len(elems), len(wantColumns))
	}
	for i, e := range elems {
		logical := "-"
		if e.LogicalType.Value != nil {
			logical = e.LogicalType.String()
		}
		got := e.Name + " " + e.Type.V.String() + " " + e.RepetitionType.V.String() + " " + logical
		if got != wantColumns[i] {
			t.Fatalf("column %d is %q, want %q", i+1, got, wantColumns[i])
		}
	}
	for _, rg := range f.Metadata().RowGroups {
		for _, c := range rg.Columns {
			if c.MetaData.Codec != format.Snappy {
				t.Fatalf("column %v is %v-compressed, want snappy", c.MetaData.PathInSchema, c.MetaData.Codec)
			}
		}
	}
	cols := f.Schema().Columns()
	var out []sampleRow
	for _, rg := range f.RowGroups() {
		rows := rg.Rows()
		buf := make([]parquet.Row, rg.NumRows())
		n, _ := rows.ReadRows(buf)
		rows.Close()
		for _, pr := range buf[:n] {
			var r sampleRow
			for _, v := range pr {
				switch cols[v.Column()][0] {
				case "run_id":
					r.runID = string(v.ByteArray())
				case "step":
					r.step = v.Int64()
				case "sample_id":
					r.sampleID = v.Int64()
				case "task":
					r.task = string(v.ByteArray())
				case "prompt":
					r.prompt = string(v.ByteArray())
				}
			}
			out = append(out, r)
		}
	}
	return out
}

// checkStepRows asserts every row of a step's objects belongs to the run and
// step, sample ids are unique in the step, and the count is what the trainer
// dispatched at that step.
func checkStepRows(t *testing.T, runID string, step int64, objects [][]byte, want int64) {
	t.Helper()
	ids := map[int64]bool{}
	for _, body := range objects {
		for _, r := range readObject(t, body) {
			if r.runID != runID || r.step != step {
				t.Fatalf("step %d object holds a row of run %q step %d", step, r.runID, r.step)
			}
			if ids[r.sampleID] {
				t.Fatalf("step %d: sample_id %d twice", step, r.sampleID)
			}
			if r.sampleID >= 1<<53 {
				t.Fatalf("sample_id %d is not below 2^53", r.sampleID)
			}
			ids[r.sampleID] = true
		}
	}
	if int64(len(ids)) != want {
		t.Fatalf("step %d has %d rows in %d objects, want %d (every train episode dispatched at it, once)", step, len(ids), len(objects), want)
	}
}

func offlineObjects(t *testing.T, runDir string) map[int64][][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(runDir, "samples", "step_*_*.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64][][]byte{}
	for _, p := range paths {
		var step, rng int64
		if _, err := fmt.Sscanf(filepath.Base(p), "step_%d_%d.parquet", &step, &rng); err != nil {
			t.Fatalf("object name %s: %v", p, err)
		}
		body, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[step] = append(out[step], body)
	}
	return out
}
