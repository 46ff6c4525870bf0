package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/primeintellect/primeexporter/internal/report"
)

// reportCommand is prime-sync report PATH...: a report.html beside each
// run, which a browser opens from disk (docs/prime-sync.md#the-run-report).
// It needs no key and no network. Each page written is printed, one path a
// line; a run whose page cannot be made is said on stderr and the others
// are still written (exit 1).
func reportCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("prime-sync report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: prime-sync report PATH...")
		fmt.Fprintln(stderr, "  PATH: a run directory (run.json or evaluation.json) or an offline directory of them.")
		fmt.Fprintln(stderr, "  Writes report.html into each run directory: one self-contained page, no server, no network.")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitDone
		}
		return exitUsage
	}
	if fs.NArg() == 0 {
		fs.Usage()
		fmt.Fprintln(stderr, "prime-sync report: no PATH given: name a run directory or an offline directory")
		return exitUsage
	}
	dirs, err := report.RunDirs(fs.Args())
	if err != nil {
		fmt.Fprintln(stderr, "prime-sync report:", err)
		return exitUsage
	}
	code := exitDone
	for _, dir := range dirs {
		path, err := report.Write(dir)
		if err != nil {
			fmt.Fprintf(stderr, "prime-sync report: %s: %v\n", dir, err)
			code = exitLeft
			continue
		}
		fmt.Fprintln(stdout, path)
	}
	return code
}
