// Command prime-sync puts runs the prime exporter wrote in offline mode
// onto the platform, exactly once and resumably.
//
//	prime-sync [flags] PATH...
//	prime-sync report PATH...
//	prime-sync compare PATH... [-o FILE]
//
// Each PATH is a run directory (one holding run.json) or a directory of
// them (the exporter's offline directory). The API key is read from
// PRIME_API_KEY only: a flag would show in ps. Exit status: 0 when
// everything was synced (or there was nothing to do), 1 when something is
// left to sync (run it again), 2 on a usage or configuration error.
//
// prime-sync report writes each run's report page (report.html, beside the
// run) and sends nothing. prime-sync compare writes one page that sets
// several runs side by side (compare.html in the current directory unless
// -o names another file, never written over) and sends nothing.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv, term.IsTerminal(int(os.Stderr.Fd())))
	stop()
	os.Exit(code)
}

// Exit statuses.
const (
	exitDone  = 0
	exitLeft  = 1
	exitUsage = 2
)

// run is the whole program; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string, terminal bool) int {
	if len(args) > 0 && args[0] == "report" {
		return reportCommand(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "compare" {
		return compareCommand(args[1:], stdout, stderr)
	}
	cfg, err := parseConfig(args, stderr, getenv)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitDone
	case err != nil:
		fmt.Fprintln(stderr, "prime-sync:", err)
		return exitUsage
	}
	return syncAll(ctx, cfg, stdout, stderr, terminal)
}
