package report

import (
	"bytes"
	"path/filepath"

	"github.com/primeintellect/primeexporter/internal/offlinesync"
	"github.com/primeintellect/primeexporter/internal/platform"
)

// File is the page's name in its run directory.
const File = "report.html"

// RunDirs expands paths: a directory holding run.json or evaluation.json
// is a run; any other directory is searched one level down (an offline
// directory), as prime-sync's own paths are.
func RunDirs(paths []string) ([]string, error) {
	return offlinesync.FindRuns(paths, platform.RunFile, platform.EvaluationFile)
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
