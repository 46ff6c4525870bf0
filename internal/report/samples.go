package report

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/primeintellect/primeexporter/internal/platform"
)

// MaxCellBytes is the most text a sample cell embeds; the rest is cut,
// and the cell says how long it was.
const MaxCellBytes = 16 << 10

// Sample is one row of a sample table as the page shows it. Numbers a
// row lacks are nil (null on the page).
type Sample struct {
	SampleID   string   `json:"sample_id"` // text: an int64 JavaScript would round
	Tag        string   `json:"tag,omitempty"`
	Env        string   `json:"env,omitempty"`
	Task       string   `json:"task,omitempty"`
	Reward     *float64 `json:"reward"`
	Advantage  *float64 `json:"advantage"`
	Prompt     string   `json:"prompt,omitempty"`
	Completion string   `json:"completion"`
}

// StepSamples is one cadence step's table: every object of the step read
// as one table, in sample_id order.
type StepSamples struct {
	Step    int64    `json:"step"`
	Objects int      `json:"objects"`
	Rows    []Sample `json:"rows"`
	Error   string   `json:"error,omitempty"` // an object that could not be read
}

// readSteps reads <run>/samples/step_<step>_<range>.parquet, by step.
func readSteps(runDir string) ([]StepSamples, error) {
	dir := filepath.Join(runDir, platform.SamplesDir)
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	byStep := map[int64][]string{}
	for _, e := range entries {
		// A write in progress is a dot file, renamed when whole.
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if step, ok := objectStep(e.Name()); ok {
			byStep[step] = append(byStep[step], filepath.Join(dir, e.Name()))
		}
	}
	var out []StepSamples
	for _, step := range slices.Sorted(maps.Keys(byStep)) {
		st := StepSamples{Step: step, Objects: len(byStep[step])}
		var ids []int64
		for _, path := range byStep[step] {
			rows, rowIDs, err := readObject(path)
			if err != nil {
				st.Error = fmt.Sprintf("%s: %v", filepath.Base(path), err)
				continue
			}
			st.Rows, ids = append(st.Rows, rows...), append(ids, rowIDs...)
		}
		sortByID(st.Rows, ids)
		out = append(out, st)
	}
	return out, nil
}

// objectStep reads the step of step_<step>_<range>.parquet.
func objectStep(name string) (int64, bool) {
	rest, ok := strings.CutPrefix(name, "step_")
	if !ok {
		return 0, false
	}
	rest, ok = strings.CutSuffix(rest, ".parquet")
	if !ok {
		return 0, false
	}
	a, b, ok := strings.Cut(rest, "_")
	if !ok {
		return 0, false
	}
	step, err1 := strconv.ParseInt(a, 10, 64)
	_, err2 := strconv.ParseInt(b, 10, 64)
	return step, err1 == nil && err2 == nil && step >= 0
}

// sortByID orders rows by their sample ids, kept apart as numbers.
func sortByID(rows []Sample, ids []int64) {
	idx := make([]int, len(rows))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(ids[a], ids[b]) })
	sorted := make([]Sample, len(rows))
	for i, j := range idx {
		sorted[i] = rows[j]
	}
	copy(rows, sorted)
}

// readObject reads one sample table object's rows and their sample ids.
func readObject(path string) ([]Sample, []int64, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	mem := memory.NewGoAllocator()
	tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(raw), parquet.NewReaderProperties(mem),
		pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		return nil, nil, err
	}
	defer tbl.Release()
	n := int(tbl.NumRows())
	rows := make([]Sample, n)
	ids := make([]int64, n)
	cols := map[string]func(arrow.Array, int, int){
		"sample_id": func(a arrow.Array, i, r int) {
			if v, ok := a.(*array.Int64); ok && v.IsValid(i) {
				ids[r] = v.Value(i)
				rows[r].SampleID = strconv.FormatInt(v.Value(i), 10)
			}
		},
		"tag":        text(func(r int, s string) { rows[r].Tag = s }),
		"env_name":   text(func(r int, s string) { rows[r].Env = s }),
		"task":       text(func(r int, s string) { rows[r].Task = s }),
		"prompt":     text(func(r int, s string) { rows[r].Prompt = s }),
		"completion": text(func(r int, s string) { rows[r].Completion = s }),
		"reward":     number(func(r int, v *float64) { rows[r].Reward = v }),
		"advantage":  number(func(r int, v *float64) { rows[r].Advantage = v }),
	}
	for i, field := range tbl.Schema().Fields() {
		set, ok := cols[field.Name]
		if !ok {
			continue
		}
		r := 0
		for _, chunk := range tbl.Column(i).Data().Chunks() {
			for j := range chunk.Len() {
				set(chunk, j, r)
				r++
			}
		}
	}
	return rows, ids, nil
}

// text sets a text cell. The exporter writes UTF-8 columns; a writer that
// left out the logical type gives binary, which is still the text.
func text(set func(r int, s string)) func(arrow.Array, int, int) {
	return func(a arrow.Array, i, r int) {
		if !a.IsValid(i) {
			return
		}
		switch v := a.(type) {
		case *array.String:
			set(r, cut(v.Value(i)))
		case *array.LargeString:
			set(r, cut(v.Value(i)))
		case *array.Binary:
			set(r, cut(string(v.Value(i))))
		}
	}
}

func number(set func(r int, v *float64)) func(arrow.Array, int, int) {
	return func(a arrow.Array, i, r int) {
		if v, ok := a.(*array.Float64); ok && v.IsValid(i) {
			f := v.Value(i)
			set(r, &f)
		}
	}
}

// cut keeps at most MaxCellBytes of s, on a rune boundary, and says how
// long s was.
func cut(s string) string {
	if len(s) <= MaxCellBytes {
		return strings.Clone(s)
	}
	end := MaxCellBytes
	for end > 0 && !utf8RuneStart(s[end]) {
		end--
	}
	return s[:end] + fmt.Sprintf("\n… (cut here: %d bytes in all)", len(s))
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
