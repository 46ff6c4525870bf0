package primeexporter

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const modulePath = "github.com/primeintellect/primeexporter"

// episodePathLayers are the packages an episode's path goes through, each
// with the packages of the path it must not import, so that nothing below
// drives what called it (docs/architecture.md, One episode's path); what
// runs upward only reports, through interfaces the lower package declares. The root is above them all. The sample table's
// Parquet writer and JSON scanner are files of internal/sampletable
// (parquet_*.go, jsonscan*.go), not packages of the path.
var episodePathLayers = map[string][]string{
	"internal/upload":      {".", "internal/runs"},
	"internal/runs":        {".", "internal/upload"},
	"internal/sampletable": {".", "internal/runs", "internal/upload", "internal/runstore", "internal/platform"},
	"internal/runstore":    {".", "internal/runs", "internal/upload", "internal/platform", "internal/sampletable"},
	"internal/platform":    {".", "internal/runs", "internal/upload", "internal/runstore", "internal/sampletable"},
	"rft":                  {".", "internal/runs", "internal/upload", "internal/runstore", "internal/platform", "internal/sampletable"},
}

func TestNoPackageOnAnEpisodesPathImportsOneThatCallsIt(t *testing.T) {
	imports := map[string][]string{}
	for dir := range episodePathLayers {
		got, err := moduleImports(dir)
		require.NoError(t, err)
		imports[dir] = got
	}
	assert.Empty(t, layerViolations(imports, episodePathLayers))
}

// The check must fail on an import up the path.
func TestTheLayeringCheckFindsAnImportUpThePath(t *testing.T) {
	imports := map[string][]string{"internal/platform": {"internal/outage", "internal/runs"}}
	assert.Equal(t, []string{"internal/platform imports internal/runs"}, layerViolations(imports, episodePathLayers))
}

// layerViolations lists each import a package must not make.
func layerViolations(imports map[string][]string, forbidden map[string][]string) []string {
	var out []string
	for dir, deps := range imports {
		for _, dep := range deps {
			if slices.Contains(forbidden[dir], dep) {
				out = append(out, dir+" imports "+dep)
			}
		}
	}
	slices.Sort(out)
	return out
}

// moduleImports lists the module's packages that dir's non-test Go files
// import, by their path from the module root ("." for the root).
func moduleImports(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, parser.ImportsOnly)
		if err != nil {
			return nil, err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case p == modulePath:
				out = append(out, ".")
			case strings.HasPrefix(p, modulePath+"/"):
				out = append(out, strings.TrimPrefix(p, modulePath+"/"))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
