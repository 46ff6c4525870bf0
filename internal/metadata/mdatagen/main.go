// Command mdatagen runs the pinned mdatagen (this module's tool directive) on
// the component's metadata.yaml; the root package's go:generate line calls it:
//
//	go run -C internal/metadata/mdatagen . ../../../metadata.yaml $GOPACKAGE
//
// It is a module of its own so that mdatagen's dependencies stay out of the
// component's module graph: the component's go.mod is what every collector
// build that includes the exporter resolves.
//
// mdatagen names the package of generated_component_test.go and
// generated_package_test.go after the directory that holds metadata.yaml, so
// a checkout under any other name (CI clones into one) would get the wrong
// package clause. mdatagen is therefore run on the file through a symlink,
// named after the package, to that directory (linkPackage). It is run on the
// root package's metadata.yaml and on primestatusextension's.
//
// The version: mdatagen v0.165.0 (the collector's) is not served by the
// module proxy; v0.161.0 is the newest that is, and it requires
// go.opentelemetry.io/collector/internal/schemagen v0.161.0, which is not
// served either, so go.mod replaces it with v0.159.0. schemagen only backs
// metadata.yaml's config section, which this component does not have. `go
// run mdatagen@version` cannot be used at all: it looks the module's latest
// version up, and the proxy lists none.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mdatagen:", err)
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.ExitCode())
		}
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 3 {
		return errors.New("usage: mdatagen <path to metadata.yaml> <package name>")
	}
	yml, err := filepath.Abs(os.Args[1])
	if err != nil {
		return err
	}
	if _, err := os.Stat(yml); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "mdatagen")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	link, err := linkPackage(tmp, filepath.Dir(yml), os.Args[2])
	if err != nil {
		return err
	}
	// go tool from this directory (go run -C put us here): the version in
	// this module's go.mod, built once and then taken from the build cache.
	cmd := exec.Command("go", "tool", "mdatagen", filepath.Join(link, filepath.Base(yml)))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

// linkPackage links dir into tmp under the package's name and returns the
// link. mdatagen takes the import path from the go.mod above the file, so a
// package below the module's root (an extension in a directory of its own)
// is linked at its place under a link to the module's go.mod.
func linkPackage(tmp, dir, pkg string) (string, error) {
	root := dir
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
		root = parent
	}
	if root == dir {
		link := filepath.Join(tmp, pkg)
		return link, os.Symlink(dir, link)
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return "", err
	}
	link := filepath.Join(tmp, filepath.Dir(rel), pkg)
	if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
		return "", err
	}
	if err := os.Symlink(filepath.Join(root, "go.mod"), filepath.Join(tmp, "go.mod")); err != nil {
		return "", err
	}
	return link, os.Symlink(dir, link)
}
