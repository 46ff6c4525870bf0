package trainerlib

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Parse reads a command's command line into its config C. getenv supplies
// the environment's fallbacks, so tests do not depend on the process's.
type Parse[C any] func(args []string, stderr io.Writer, getenv func(string) string) (C, error)

// Run plays one run of cfg and prints its summary to stdout. sink holds the
// errors the SDK reported meanwhile: they fail the run too.
type Run[C any] func(ctx context.Context, cfg C, stdout io.Writer, sink *ErrorSink) error

// Main runs the command until it returns or an interrupt cancels its
// context, and exits 2 on a UsageError, 1 on any other error, naming the
// command.
func Main[C any](name string, parse Parse[C], run Run[C]) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := Execute(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv, parse, run)
	stop()
	os.Exit(exitCode(name, err, os.Stderr))
}

// Execute is the whole program but its exit, for Main and for tests: parse
// the command line, then run with the SDK's errors collected (batched exports
// report their failures only to the global error handler).
func Execute[C any](ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string, parse Parse[C], run Run[C]) error {
	cfg, err := parse(args, stderr, getenv)
	if err != nil {
		return err
	}
	sink, restore := CollectErrors()
	defer restore()
	return run(ctx, cfg, stdout, sink)
}

// exitCode prints err, if any, and says how the program exits: -h is no
// error, a bad command line is 2, the rest 1.
func exitCode(name string, err error, stderr io.Writer) int {
	var usage UsageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &usage):
		fmt.Fprintln(stderr, name+":", err)
		return 2
	default:
		fmt.Fprintln(stderr, name+":", err)
		return 1
	}
}
