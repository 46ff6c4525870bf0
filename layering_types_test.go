package primeexporter

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// leafPackages are the packages every layer may call into, each with the
// only module packages it may import, so that a call into one goes down
// and ends there: the counters (internal/telemetry), the pod index
// (internal/pods) and the pdata readers and writers.
var leafPackages = map[string][]string{
	"internal/telemetry": {"internal/metadata", "internal/reject"},
	"internal/pods":      {},
	"internal/pvalue":    {},
	"internal/pjson":     {},
	"internal/reject":    {},
	"internal/logonce":   {},
}

func TestTheLeavesImportNothingOfTheModuleButWhatTheyAreAllowed(t *testing.T) {
	for dir, allowed := range leafPackages {
		got, err := moduleImports(dir)
		require.NoError(t, err)
		for _, dep := range got {
			assert.Contains(t, allowed, dep, "%s imports %s", dir, dep)
		}
	}
}

// An interface a package of the path declares is how it calls what it was
// handed. The root is above every such package, so none of the root's
// types may satisfy one: a lower package calling root code through it
// would be a call back up the path (the self-telemetry counters once did,
// through upload.Telemetry and runs.Telemetry).
func TestNoRootTypeSatisfiesAnInterfaceAPackageOfThePathDeclares(t *testing.T) {
	root, path := loadTypes(t)
	assert.Empty(t, upwardImplementations(root, path))
}

// The check must find a root type that satisfies a path interface.
func TestTheUpwardCallCheckFindsARootTypeServingAPathInterface(t *testing.T) {
	fset := token.NewFileSet()
	check := func(path, src string, imp types.Importer) *types.Package {
		f, err := parser.ParseFile(fset, path+".go", src, 0)
		require.NoError(t, err)
		pkg, err := (&types.Config{Importer: imp}).Check(path, fset, []*ast.File{f}, nil)
		require.NoError(t, err)
		return pkg
	}
	lower := check("lower", "package lower\ntype Telemetry interface{ Count(n int) }\ntype empty interface{}\n", nil)
	imp := importerFunc(func(string) (*types.Package, error) { return lower, nil })
	root := check("root", "package root\nimport _ \"lower\"\ntype tel struct{}\nfunc (*tel) Count(n int) {}\n", imp)
	assert.Equal(t, []string{"*root.tel satisfies lower.Telemetry"}, upwardImplementations(root, []*types.Package{lower}))
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// upwardImplementations lists each named type of root (or its pointer)
// that satisfies a non-empty interface one of path declares.
func upwardImplementations(root *types.Package, path []*types.Package) []string {
	var out []string
	for _, name := range root.Scope().Names() {
		tn, ok := root.Scope().Lookup(name).(*types.TypeName)
		if !ok || types.IsInterface(tn.Type()) {
			continue
		}
		for _, p := range path {
			for _, iname := range p.Scope().Names() {
				it, ok := p.Scope().Lookup(iname).(*types.TypeName)
				if !ok || !types.IsInterface(it.Type()) {
					continue
				}
				iface := it.Type().Underlying().(*types.Interface)
				if iface.NumMethods() == 0 || iface.IsComparable() && !iface.IsMethodSet() {
					continue
				}
				for _, typ := range []types.Type{tn.Type(), types.NewPointer(tn.Type())} {
					if types.Implements(typ, iface) {
						out = append(out, fmt.Sprintf("%s satisfies %s.%s", types.TypeString(typ, types.RelativeTo(nil)), p.Name(), iname))
						break
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// loadTypes type-checks the root package's non-test files, and reads the
// packages of the path from the compiler's export data (go list -export,
// which the build cache serves).
func loadTypes(t *testing.T) (*types.Package, []*types.Package) {
	t.Helper()
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", ".")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	exports := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if p, file, ok := strings.Cut(sc.Text(), "\t"); ok && file != "" {
			exports[p] = file
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(p string) (io.ReadCloser, error) {
		file, ok := exports[p]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", p)
		}
		return os.Open(file)
	})
	var files []*ast.File
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		files = append(files, f)
	}
	root, err := (&types.Config{Importer: imp}).Check(modulePath, fset, files, nil)
	require.NoError(t, err)
	var path []*types.Package
	for dir := range episodePathLayers {
		p, err := imp.Import(modulePath + "/" + dir)
		require.NoError(t, err)
		path = append(path, p)
	}
	return root, path
}
