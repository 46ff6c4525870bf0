package primeexporter

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// markdownLink is [text](target); images and reference links are not used.
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// layoutPage holds the layout list: every package and root file of the
// repository, named in its "## Layout" section.
const layoutPage = "docs/architecture.md"

// maxReadmeLines keeps the README a front door (STYLE.md): configuration,
// guarantees and links; the rest lives in docs/.
const maxReadmeLines = 300

func TestEveryLinkInTheReadmeAndDocsResolvesInsideTheRepository(t *testing.T) {
	root, err := filepath.Abs(".")
	require.NoError(t, err)
	pages, err := filepath.Glob("docs/*.md")
	require.NoError(t, err)
	pages = append(pages, "README.md", "deploy/README.md")
	anchors := map[string]map[string]bool{} // page (absolute) → its headings' anchors
	anchorsOf := func(abs string) map[string]bool {
		if a, ok := anchors[abs]; ok {
			return a
		}
		body, err := os.ReadFile(abs)
		require.NoError(t, err)
		anchors[abs] = headingAnchors(string(body))
		return anchors[abs]
	}
	links := 0
	for _, page := range pages {
		body, err := os.ReadFile(page)
		require.NoError(t, err)
		for _, m := range markdownLink.FindAllStringSubmatch(string(body), -1) {
			target := m[1]
			if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
				continue
			}
			links++
			path, anchor, _ := strings.Cut(target, "#")
			abs, err := filepath.Abs(filepath.Join(filepath.Dir(page), path))
			require.NoError(t, err)
			if path != "" {
				assert.True(t, strings.HasPrefix(abs, root+string(filepath.Separator)), "%s links outside the repository: %s", page, target)
			}
			if _, err = os.Stat(abs); !assert.NoError(t, err, "%s links to %s", page, target) {
				continue
			}
			if anchor != "" && strings.HasSuffix(abs, ".md") {
				assert.True(t, anchorsOf(abs)[anchor], "%s links to %s: no heading has the anchor #%s", page, target, anchor)
			}
		}
	}
	assert.Positive(t, links, "the pages link to each other")
}

// headingAnchors returns the anchors GitHub gives a page's headings: the
// heading lowercased, punctuation dropped, spaces turned into hyphens, and
// -1, -2, … on repeats. Lines inside fenced code blocks are not headings.
func headingAnchors(page string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	sc := bufio.NewScanner(strings.NewReader(page))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		text := strings.TrimLeft(line, "#")
		if fenced || len(text) == len(line) || len(line)-len(text) > 6 || !strings.HasPrefix(text, " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(text)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
				b.WriteRune(r)
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

func TestDocsHeadingAnchorsAreGitHubs(t *testing.T) {
	got := headingAnchors("# Title\n## 2. Metrics\n### `prime.run.end`: the run is over\n```\n# not a heading\n```\n## Title\n#no space\n")
	assert.Equal(t, map[string]bool{"title": true, "2-metrics": true, "primerunend-the-run-is-over": true, "title-1": true}, got)
}

func TestTheReadmeStaysAFrontDoorOfAtMost300Lines(t *testing.T) {
	body, err := os.ReadFile("README.md")
	require.NoError(t, err)
	lines := strings.Count(string(body), "\n")
	if !strings.HasSuffix(string(body), "\n") {
		lines++
	}
	assert.LessOrEqual(t, lines, maxReadmeLines, "README.md has %d lines: move detail to docs/ and link to it", lines)
}

func TestTheLayoutNamesEveryPackageAndRootFile(t *testing.T) {
	layout := layoutSection(t)
	missing, err := notInLayout(".", layout)
	require.NoError(t, err)
	assert.Empty(t, missing, "%s's Layout section does not name these", layoutPage)
}

// The check must fail when the layout leaves something out: take a package
// and a root file out of the real layout and it has to name both.
func TestTheLayoutCheckFailsWhenAPackageOrRootFileIsNotNamed(t *testing.T) {
	layout := layoutSection(t)
	for _, gone := range []string{"internal/runs/", "push.go"} {
		require.Contains(t, layout, gone)
		missing, err := notInLayout(".", strings.ReplaceAll(layout, gone, ""))
		require.NoError(t, err)
		assert.Contains(t, missing, gone, "a layout without %s passes", gone)
	}
}

// layoutSection is the text of layoutPage's "## Layout" section.
func layoutSection(t *testing.T) string {
	t.Helper()
	body, err := os.ReadFile(layoutPage)
	require.NoError(t, err)
	_, layout, ok := strings.Cut(string(body), "\n## Layout\n")
	require.True(t, ok, "%s has a Layout section", layoutPage)
	layout, _, _ = strings.Cut(layout, "\n## ")
	return layout
}

// notInLayout lists what under root the layout does not name: each directory
// holding Go files, by its path from root with a trailing slash
// (internal/runs/), and each root .go file that is not a test.
func notInLayout(root, layout string) ([]string, error) {
	var missing []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if d.IsDir() && rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
			return filepath.SkipDir
		}
		switch {
		case d.IsDir():
			hasGo, _ := filepath.Glob(filepath.Join(path, "*.go"))
			if dir := filepath.ToSlash(rel) + "/"; rel != "." && len(hasGo) > 0 && !strings.Contains(layout, dir) {
				missing = append(missing, dir)
			}
		case filepath.Dir(rel) == "." && strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go"):
			if !strings.Contains(layout, name) {
				missing = append(missing, name)
			}
		}
		return nil
	})
	return missing, err
}
