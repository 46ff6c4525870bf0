package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/sampletable"
)

// readEvalSamples reads an offline evaluation's samples.jsonl, one v0
// sample a line, in the order they were appended; a line that is not a
// sample is counted.
func readEvalSamples(dir string) (rows []Sample, bad int, err error) {
	f, err := os.Open(filepath.Join(dir, platform.EvalSamplesFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	for {
		line, rerr := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if s, ok := evalSample(line); ok {
				rows = append(rows, s)
			} else {
				bad++
			}
		}
		if errors.Is(rerr, io.EOF) {
			return rows, bad, nil
		}
		if rerr != nil {
			return rows, bad, rerr
		}
	}
}

// evalSample reads one v0 sample. Its prompt and completion are chat
// messages (JSON) or text; JSON stays as its text.
func evalSample(line []byte) (Sample, bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		fixed, changed := sampletable.RewriteJSON(string(line), false, true)
		if !changed || json.Unmarshal([]byte(fixed), &m) != nil {
			return Sample{}, false
		}
	}
	s := Sample{
		SampleID:   plain(m["sample_id"]),
		Task:       cut(plain(m["task"])),
		Prompt:     cut(plain(m["prompt"])),
		Completion: cut(plain(m["completion"])),
	}
	if v, ok := finite(m["reward"]); ok {
		s.Reward = &v
	}
	return s, true
}

// plain is a JSON value as a page shows it: a string's text, anything else
// its JSON, null as "".
func plain(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}

// readJSON reads a record file of the run directory. A number in a config
// or summary stays as written (json.Number): a seed of 2^63 is shown, and
// compared, as its digits rather than as the nearest float64.
func readJSON(path string, v any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: more after its JSON value", filepath.Base(path))
	}
	return nil
}
