package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/primeintellect/primeexporter/internal/report"
)

// compareCommand is prime-sync compare PATH... [-o FILE]: one page that
// sets several runs side by side, their curves overlaid, their configs
// diffed and their samples matched by prompt
// (docs/prime-sync.md#comparing-runs). It needs no key and no network. It
// prints each run it compared and, last, the page's path. It never writes
// over a file: an -o that exists is refused before any run is read.
func compareCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("prime-sync compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", report.DefaultCompareFile, "the page to write; never written over (an existing file is refused)")
	var f report.Filter
	fs.StringVar(&f.Name, "name", "", "compare only runs whose name, id or directory matches this glob (e.g. 'sweep-*')")
	fs.StringVar(&f.Kind, "kind", "", "compare only runs of this kind: train or eval")
	since := fs.String("since", "", "compare only runs created at or after this date (2026-12-04, or RFC 3339)")
	until := fs.String("until", "", "compare only runs created on or before this date (a date includes its whole day), or before this RFC 3339 time")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: prime-sync compare PATH... [-o FILE] [-name GLOB] [-kind train|eval] [-since DATE] [-until DATE]")
		fmt.Fprintln(stderr, "  PATH: a run directory, or a directory of runs (an offline directory); at least two runs in all.")
		fmt.Fprintln(stderr, "  Writes one self-contained page (default ./"+report.DefaultCompareFile+"), never over a file; no server, no network.")
		fs.PrintDefaults()
	}
	paths, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitDone
	}
	if err != nil {
		return exitUsage
	}
	usage := func(err error) int {
		fmt.Fprintln(stderr, "prime-sync compare:", err)
		return exitUsage
	}
	if len(paths) == 0 {
		fs.Usage()
		return usage(errors.New("no PATH given: name two or more run directories, or a directory of runs"))
	}
	if f.Since, err = parseDate("-since", *since, false); err != nil {
		return usage(err)
	}
	if f.Until, err = parseDate("-until", *until, true); err != nil {
		return usage(err)
	}
	page, err := filepath.Abs(*out)
	if err != nil {
		return usage(err)
	}
	// Refused before the runs are read: twenty big runs take a while.
	if _, err := os.Lstat(page); err == nil {
		return usage(fmt.Errorf("%s %w: remove it, or name another file with -o", page, report.ErrExists))
	}
	if info, err := os.Stat(filepath.Dir(page)); err != nil || !info.IsDir() {
		return usage(fmt.Errorf("-o %s: its directory %s does not exist", *out, filepath.Dir(page)))
	}
	sel, err := report.SelectRuns(paths, f)
	if err != nil {
		return usage(err)
	}
	c, err := report.Compare(sel)
	if err != nil {
		fmt.Fprintln(stderr, "prime-sync compare:", err)
		return exitLeft
	}
	if err := report.WriteCompare(c, page); err != nil {
		fmt.Fprintln(stderr, "prime-sync compare:", err)
		if errors.Is(err, report.ErrExists) {
			return exitUsage
		}
		return exitLeft
	}
	for _, r := range c.Runs {
		fmt.Fprintf(stdout, "compared %s: %s\n", r.Label, r.Dir)
	}
	code := exitDone
	for _, s := range c.Skipped {
		// Said on the page too; exit 1, since a run named was left out.
		fmt.Fprintf(stderr, "prime-sync compare: not compared: %s: %s\n", s.Dir, s.Reason)
		code = exitLeft
	}
	fmt.Fprintln(stdout, page)
	return code
}

// parseInterleaved parses flags wherever they stand among the paths
// (prime-sync compare a b -o x.html): the flag package stops at the first
// path, so it is called again after each.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var paths []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return paths, nil
		}
		paths = append(paths, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// parseDate reads a date (UTC) or an RFC 3339 time; a date as an upper
// bound takes in its whole day.
func parseDate(flagName, s string, upper bool) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.Parse(time.DateOnly, s); err == nil {
		if upper {
			d = d.AddDate(0, 0, 1)
		}
		return d, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q: want a date (2026-12-04) or an RFC 3339 time (2026-12-04T10:00:00Z)", flagName, s)
	}
	return t, nil
}
