package trainerlib

import (
	"context"
	"io"
	"sync"

	"bytes"
	"errors"
	"flag"
	"fmt"
	"testing"

	"go.opentelemetry.io/otel"
)

func TestAFailedExportIsReportedAloneAndTheRestTogether(t *testing.T) {
	exportErr := &ExportError{During: "flush after step 3", Err: errors.New("400")}
	shutdown, reported, interrupted := errors.New("shutdown failed"), errors.New("async"), errors.New("interrupted")
	if got := FirstFailure(exportErr, shutdown, reported); got != exportErr {
		t.Errorf("FirstFailure = %v, want the export error alone", got)
	}
	got := FirstFailure(interrupted, shutdown, reported)
	for _, want := range []error{interrupted, shutdown, reported} {
		if !errors.Is(got, want) {
			t.Errorf("FirstFailure = %v, lacks %v", got, want)
		}
	}
	var asExport *ExportError
	if !errors.As(FirstFailure(nil, shutdown, nil), &asExport) || asExport.During != "shutdown" {
		t.Errorf("a failed shutdown is %v, want an export error during shutdown", FirstFailure(nil, shutdown, nil))
	}
	if err := FirstFailure(nil, nil, nil); err != nil {
		t.Errorf("FirstFailure of nothing = %v", err)
	}
}

func TestTheExitCodeIs2ForABadCommandLineAnd1ForTheRest(t *testing.T) {
	for _, tc := range []struct {
		err    error
		code   int
		stderr string
	}{
		{nil, 0, ""},
		{flag.ErrHelp, 0, ""},
		{fmt.Errorf("parsing: %w", UsageError("-steps must be at least 1")), 2, "demo: parsing: -steps must be at least 1\n"},
		{&ExportError{During: "shutdown", Err: errors.New("refused")}, 1, "demo: export failed (shutdown): refused\n"},
	} {
		var stderr bytes.Buffer
		if code := exitCode("demo", tc.err, &stderr); code != tc.code || stderr.String() != tc.stderr {
			t.Errorf("%v: exit %d, %q; want %d, %q", tc.err, code, stderr.String(), tc.code, tc.stderr)
		}
	}
}

func TestTheSinkReturnsEveryErrorAndEachNewOneOnce(t *testing.T) {
	var s ErrorSink
	a, b := errors.New("a"), errors.New("b")
	s.Handle(a)
	if got := s.TakeNew(); !errors.Is(got, a) {
		t.Fatalf("TakeNew = %v, want a", got)
	}
	if got := s.TakeNew(); got != nil {
		t.Fatalf("TakeNew again = %v, want nothing new", got)
	}
	s.Handle(b)
	if got := s.TakeNew(); !errors.Is(got, b) || errors.Is(got, a) {
		t.Fatalf("TakeNew = %v, want b alone", got)
	}
	if got := s.Err(); !errors.Is(got, a) || !errors.Is(got, b) {
		t.Fatalf("Err = %v, want a and b", got)
	}
}

func TestExecuteRunsOnlyAParsedConfigAndGivesItTheSDKsErrors(t *testing.T) {
	parse := func(args []string, _ io.Writer, _ func(string) string) (string, error) {
		if len(args) > 0 {
			return "", UsageError("unexpected arguments")
		}
		return "cfg", nil
	}
	ran := false
	run := func(_ context.Context, cfg string, stdout io.Writer, sink *ErrorSink) error {
		ran = true
		otel.Handle(errors.New("export failed"))
		fmt.Fprint(stdout, cfg)
		return sink.Err()
	}
	var stdout bytes.Buffer
	err := Execute(context.Background(), []string{"extra"}, &stdout, io.Discard, noEnv, parse, run)
	var usage UsageError
	if !errors.As(err, &usage) || ran {
		t.Fatalf("bad args: err %v, ran %v; want the usage error and no run", err, ran)
	}
	err = Execute(context.Background(), nil, &stdout, io.Discard, noEnv, parse, run)
	if err == nil || err.Error() != "export failed" || stdout.String() != "cfg" {
		t.Fatalf("err %v, stdout %q; want the SDK's error and the run's output", err, stdout.String())
	}
}

func TestEachRunsSinkCollectsTheSDKsErrorsFromManyGoroutines(t *testing.T) {
	first, restore := CollectErrors()
	otel.Handle(errors.New("the first run's"))
	restore()
	second, restore := CollectErrors()
	defer restore()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { otel.Handle(errors.New("export failed")) })
	}
	wg.Wait()
	if got, want := [2]int{len(first.errs), len(second.errs)}, [2]int{1, 8}; got != want {
		t.Fatalf("the runs' sinks hold %v errors, want %v", got, want)
	}
}
