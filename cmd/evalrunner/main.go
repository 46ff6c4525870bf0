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
		fmt.Fprintln(os.Stderr, "evalrunner:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "evalrunner:", err)
		os.Exit(1)
	}
}

// run is the whole program: parse args, play the evaluation, flush, and
// print a one-line summary to stdout. It fails if any telemetry was not
// delivered.
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

	tel, err := newTelemetry(ctx, cfg, sink)
	if err != nil {
		return fmt.Errorf("setting up the OTLP exporter for %s: %w", cfg.endpoint, err)
	}
	r := runner{
		cfg:  cfg,
		eval: planEvaluation(cfg),
		events: events{
			logger: tel.loggers.Logger(instrumentationScope),
			now:    time.Now,
		},
		flush: tel.flush,
		sleep: sleepContext,
	}
	out, runErr := r.run(ctx)

	// Shut down even after an interrupt, so what was recorded still goes out.
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*cfg.exportTimeout)
	defer cancel()
	shutdownErr := tel.shutdown(shutdownCtx)
	if err := firstFailure(runErr, shutdownErr, sink.err()); err != nil {
		return fmt.Errorf("evaluation %s to %s: %w", runIdentity(cfg), cfg.endpoint, err)
	}

	m := newManifest(cfg, r.eval, out, tel.logRecords.Load())
	if cfg.manifest != "" {
		if err := writeManifest(cfg.manifest, m); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "evalrunner: evaluation %s: %d episodes (%d failed) of %d examples, %d summary keys, %s; %d log records sent to %s\n",
		runIdentity(cfg), m.Counts.Episodes, m.Counts.Failed, m.Counts.Examples, len(out.summary), endText(out.status), m.Counts.LogRecords, cfg.endpoint)
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

// endText says how the evaluation was ended.
func endText(status string) string {
	if status == statusNone {
		return "no prime.run.end"
	}
	return "prime.run.end " + status
}

// runIdentity names the evaluation the way the exporter will resolve it.
func runIdentity(cfg config) string {
	if cfg.runID != "" {
		return "id " + cfg.runID
	}
	return "key " + cfg.runKey
}

// manifest is what the run sent, for tests that compare it with the
// platform's evaluation.
type manifest struct {
	RunKey string `json:"run_key,omitempty"`
	RunID  string `json:"run_id,omitempty"`
	// RunnerID is the documents' run.id, the runner's own id.
	RunnerID     string   `json:"runner_id"`
	Status       string   `json:"status"`
	Environments []string `json:"environments"`
	Counts       counts   `json:"counts"`
	// Summary holds the user summary keys as sent in prime.metrics (null
	// with -summary=false).
	Summary map[string]any `json:"summary"`
	// Expected holds what the exporter computes over the episodes, as the
	// SDK does: avg_reward over every episode (a failed one scores 0, and
	// every trace is trainable), avg_error the share not ok.
	Expected expected      `json:"expected"`
	Episodes []sentEpisode `json:"episodes"`
}

type counts struct {
	Episodes int `json:"episodes"`
	Failed   int `json:"failed"`
	Examples int `json:"examples"`
	// LogRecords is every record the collector accepted: episodes, the
	// summary event and the end event.
	LogRecords int64 `json:"log_records"`
}

type expected struct {
	AvgReward *float64 `json:"avg_reward"`
	AvgError  *float64 `json:"avg_error"`
}

func newManifest(cfg config, ev evaluation, out outcome, logRecords int64) manifest {
	m := manifest{
		RunKey: cfg.runKey, RunID: cfg.runID, RunnerID: ev.runnerID, Status: out.status,
		Environments: cfg.environments,
		Counts:       counts{Episodes: len(out.sent), LogRecords: logRecords},
		Episodes:     out.sent,
	}
	if m.Episodes == nil {
		m.Episodes = []sentEpisode{}
	}
	examples := map[int]bool{}
	reward := 0.0
	for _, e := range out.sent {
		examples[e.ExampleIdx] = true
		reward += e.Reward
		if !e.OK {
			m.Counts.Failed++
		}
	}
	m.Counts.Examples = len(examples)
	if n := float64(len(out.sent)); n > 0 {
		avgReward, avgError := reward/n, float64(m.Counts.Failed)/n
		m.Expected = expected{AvgReward: &avgReward, AvgError: &avgError}
	}
	if cfg.summary {
		m.Summary = map[string]any{}
		for _, v := range out.summary {
			m.Summary[v.name] = v.value
		}
	}
	return m
}

func writeManifest(path string, m manifest) error {
	body, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(body, '\n'), 0o600)
}
