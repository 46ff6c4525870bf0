package primeexporter

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// markdownLink is [text](target); images and reference links are not used.
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

func TestEveryLinkInTheReadmeAndDocsResolvesInsideTheRepository(t *testing.T) {
	root, err := filepath.Abs(".")
	require.NoError(t, err)
	pages, err := filepath.Glob("docs/*.md")
	require.NoError(t, err)
	pages = append(pages, "README.md")
	links := 0
	for _, page := range pages {
		body, err := os.ReadFile(page)
		require.NoError(t, err)
		for _, m := range markdownLink.FindAllStringSubmatch(string(body), -1) {
			target := m[1]
			if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") || strings.HasPrefix(target, "#") {
				continue
			}
			links++
			path, _, _ := strings.Cut(target, "#")
			abs, err := filepath.Abs(filepath.Join(filepath.Dir(page), path))
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(abs, root+string(filepath.Separator)), "%s links outside the repository: %s", page, target)
			_, err = os.Stat(abs)
			assert.NoError(t, err, "%s links to %s", page, target)
		}
	}
	assert.Positive(t, links, "the pages link to each other")
}

func TestTheReadmeLayoutNamesEveryPackageAndRootFile(t *testing.T) {
	body, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, layout, ok := strings.Cut(string(body), "## Layout")
	require.True(t, ok, "README has a Layout section")
	layout, _, _ = strings.Cut(layout, "\n## ")

	var missing []string
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
			return filepath.SkipDir
		}
		switch {
		case d.IsDir():
			hasGo, _ := filepath.Glob(filepath.Join(path, "*.go"))
			if path != "." && len(hasGo) > 0 && !strings.Contains(layout, name+"/") {
				missing = append(missing, path+"/")
			}
		case filepath.Dir(path) == "." && strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go"):
			if !strings.Contains(layout, name) {
				missing = append(missing, name)
			}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Empty(t, missing, "the README's Layout section does not name these")
}
