package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.opentelemetry.io/otel"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	var usage usageError
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "demotrainer:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "demotrainer:", err)
		os.Exit(1)
	}
}

// run is the whole program: parse args, play the run, flush, and print a
// one-line summary to stdout. It fails if any telemetry was not delivered.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	cfg, err := parseConfig(args, stderr, getenv)
	if err != nil {
		return err
	}

	// Batched exports report failures only to the global error handler;
	// collect them for this run so that none is lost.
	sink := &errorSink{}
	previous := otel.GetErrorHandler()
	otel.SetErrorHandler(sink)
	defer otel.SetErrorHandler(previous)

	tel, err := newTelemetry(ctx, cfg)
	if err != nil {
		return fmt.Errorf("setting up OTLP exporters for %s: %w", cfg.endpoint, err)
	}
	in, err := newInstruments(tel.meters.Meter(instrumentationScope))
	if err != nil {
		return errors.Join(err, tel.shutdown(context.WithoutCancel(ctx)))
	}
	t := trainer{
		cfg: cfg,
		in:  in,
		events: events{
			logger: tel.loggers.Logger(instrumentationScope),
			now:    time.Now,
		},
		flush: tel.flush,
		sleep: sleepContext,
	}
	out, runErr := t.run(ctx)

	// Shut down even after an interrupt, so what was recorded still goes out.
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*cfg.exportTimeout)
	defer cancel()
	shutdownErr := tel.shutdown(shutdownCtx)
	if err := firstFailure(runErr, shutdownErr, sink.err()); err != nil {
		return fmt.Errorf("run %s to %s: %w", runIdentity(cfg), cfg.endpoint, err)
	}

	if cfg.manifest != "" {
		if err := writeManifest(cfg.manifest, out); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "demotrainer: run %s: %d steps, %d metric points, %d episodes (%d eval), %d log records, %s; sent to %s\n",
		runIdentity(cfg), out.steps, tel.metricPoints.Load(), out.episodes, out.evalEpisodes, tel.logRecords.Load(), endText(out.status), cfg.endpoint)
	return nil
}

// firstFailure picks the error to report. A failed export fails the run on
// its own: the shutdown after it fails the same way and would only repeat it.
func firstFailure(runErr, shutdownErr, reportedErr error) error {
	var exportErr *exportError
	if errors.As(runErr, &exportErr) {
		return runErr
	}
	var errs []error
	if runErr != nil {
		errs = append(errs, runErr)
	}
	if shutdownErr != nil {
		errs = append(errs, &exportError{during: "shutdown", err: shutdownErr})
	}
	if reportedErr != nil {
		errs = append(errs, &exportError{during: "reported by the OTel SDK", err: reportedErr})
	}
	return errors.Join(errs...)
}

// endText says how the run was ended.
func endText(status string) string {
	if status == statusNone {
		return "no prime.run.end"
	}
	return "prime.run.end " + status
}

// runIdentity names the run the way the exporter will resolve it.
func runIdentity(cfg config) string {
	if cfg.runID != "" {
		return "id " + cfg.runID
	}
	return "key " + cfg.runKey
}

// writeManifest records what the run sent, for tests that check what landed.
func writeManifest(path string, out outcome) error {
	body, err := json.Marshal(struct {
		Steps           int         `json:"steps"`
		Episodes        int         `json:"episodes"`
		EvalEpisodes    int         `json:"eval_episodes"`
		TrainByDispatch map[int]int `json:"train_episodes_by_dispatch_step"`
	}{out.steps, out.episodes, out.evalEpisodes, out.trainByDispatch})
	if err != nil {
		return err
	}
	return os.WriteFile(path, body, 0o600)
}
