package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/primeintellect/primeexporter/internal/platform"
)

// File is the page's name in its run directory.
const File = "report.html"

// RunDirs expands paths: a directory holding run.json or evaluation.json
// is a run; any other directory is searched one level down (an offline
// directory). A path that yields no run is an error naming it.
func RunDirs(paths []string) ([]string, error) {
	var dirs []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			return nil, fmt.Errorf("%s is not a directory: give a run directory or an offline directory", p)
		}
		if isRun(p) {
			dirs = append(dirs, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		found := false
		for _, e := range entries {
			if d := filepath.Join(p, e.Name()); e.IsDir() && isRun(d) {
				dirs = append(dirs, d)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("%s holds no %s or %s and no run directories", p, platform.RunFile, platform.EvaluationFile)
		}
	}
	return dirs, nil
}

func isRun(dir string) bool {
	return isFile(filepath.Join(dir, platform.RunFile)) || isFile(filepath.Join(dir, platform.EvaluationFile))
}

// Write renders the run in dir to dir/report.html, replaced atomically
// and owner-only like the run's own files, and returns its path.
func Write(dir string) (string, error) {
	r, err := Load(dir)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := Render(&buf, r); err != nil {
		return "", err
	}
	if err := platform.WriteFileAtomic(dir, File, buf.Bytes(), false); err != nil {
		return "", err
	}
	return filepath.Join(dir, File), nil
}
