package offlinesync

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/primeintellect/primeexporter/internal/platform"
)

// RunDirs expands the command's paths: a directory holding run.json is a
// run; any other directory is searched one level down for runs (an
// offline directory). A path that yields no run is an error naming it.
func RunDirs(paths []string) ([]string, error) {
	return FindRuns(paths, platform.RunFile)
}

// FindRuns expands paths the same way for any kind of run: a directory
// holding one of files is a run (prime-sync report also takes
// evaluation.json).
func FindRuns(paths []string, files ...string) ([]string, error) {
	holds := strings.Join(files, " or ")
	isRun := func(dir string) bool {
		return slices.ContainsFunc(files, func(f string) bool {
			info, err := os.Stat(filepath.Join(dir, f))
			return err == nil && info.Mode().IsRegular()
		})
	}
	var dirs []string
	seen := map[string]bool{}
	add := func(d string) {
		if abs, err := filepath.Abs(d); err == nil && !seen[abs] {
			seen[abs] = true
			dirs = append(dirs, d)
		}
	}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			return nil, fmt.Errorf("%s is not a directory: give a run directory (holding %s) or an offline directory", p, holds)
		}
		if isRun(p) {
			add(p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		found := false
		for _, e := range entries {
			if d := filepath.Join(p, e.Name()); e.IsDir() && isRun(d) {
				add(d)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("%s holds no %s and no run directories", p, holds)
		}
	}
	return dirs, nil
}

// readRun reads run.json.
func readRun(dir string) (platform.RunRecord, error) {
	var rec platform.RunRecord
	raw, err := os.ReadFile(filepath.Join(dir, platform.RunFile))
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return rec, fmt.Errorf("%s: %w", platform.RunFile, err)
	}
	if rec.ID == "" {
		return rec, fmt.Errorf("%s has no id", platform.RunFile)
	}
	return rec, nil
}

// objectFile is one sample object the exporter wrote offline.
type objectFile struct {
	Name  string // step_<step>_<range>.parquet
	Step  int64
	Range int64
	Size  int64
}

// listObjects returns the run's objects by step, then range: the order the
// exporter made them in. Temporary files of a write in progress start with
// a dot and are not objects.
func listObjects(dir string) ([]objectFile, error) {
	entries, err := os.ReadDir(filepath.Join(dir, platform.SamplesDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []objectFile
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		step, rng, ok := parseObjectName(e.Name())
		if !ok {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		out = append(out, objectFile{Name: e.Name(), Step: step, Range: rng, Size: info.Size()})
	}
	slices.SortFunc(out, func(a, b objectFile) int {
		if a.Step != b.Step {
			return int(a.Step - b.Step)
		}
		return int(a.Range - b.Range)
	})
	return out, nil
}

// parseObjectName reads step_<step>_<range>.parquet.
func parseObjectName(name string) (step, rng int64, ok bool) {
	rest, found := strings.CutPrefix(name, "step_")
	if !found {
		return 0, 0, false
	}
	rest, found = strings.CutSuffix(rest, ".parquet")
	if !found {
		return 0, 0, false
	}
	a, b, found := strings.Cut(rest, "_")
	if !found {
		return 0, 0, false
	}
	step, err1 := strconv.ParseInt(a, 10, 64)
	rng, err2 := strconv.ParseInt(b, 10, 64)
	return step, rng, err1 == nil && err2 == nil && step >= 0 && rng >= 0
}

// metricsLine is one complete line of metrics.jsonl and the offset just
// past it.
type metricsLine struct {
	Body []byte
	End  int64
}

// readMetrics returns the complete lines of metrics.jsonl from offset on.
// A last line without its newline is still being written and is left for
// the next sync.
func readMetrics(dir string, offset int64) ([]metricsLine, int64, error) {
	f, err := os.Open(filepath.Join(dir, platform.MetricsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if info.Size() < offset {
		return nil, 0, fmt.Errorf("%s is shorter (%d bytes) than the %d bytes already synced: it was replaced, so the journal no longer describes it", platform.MetricsFile, info.Size(), offset)
	}
	raw, err := io.ReadAll(io.NewSectionReader(f, offset, info.Size()-offset))
	if err != nil {
		return nil, 0, err
	}
	var lines []metricsLine
	pos := offset
	for {
		i := bytes.IndexByte(raw, '\n')
		if i < 0 {
			break
		}
		pos += int64(i) + 1
		if line := bytes.TrimSpace(raw[:i]); len(line) > 0 {
			lines = append(lines, metricsLine{Body: line, End: pos})
		}
		raw = raw[i+1:]
	}
	return lines, pos - offset, nil
}
