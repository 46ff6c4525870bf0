package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/primeintellect/primeexporter/cmd/internal/trainerlib"
)

// run plays the evaluation, flushes, and prints a one-line summary to
// stdout. It fails if any telemetry was not delivered.
func run(ctx context.Context, cfg config, stdout io.Writer, sink *trainerlib.ErrorSink) error {
	tel, err := newTelemetry(ctx, cfg, sink)
	if err != nil {
		return fmt.Errorf("setting up the OTLP exporter for %s: %w", cfg.Endpoint, err)
	}
	r := runner{
		cfg:  cfg,
		eval: planEvaluation(cfg),
		play: trainerlib.Play{
			Events: trainerlib.Events{Logger: tel.logs.Provider.Logger(instrumentationScope), Now: time.Now, StampObserved: true},
			Flush:  tel.flush,
			Sleep:  trainerlib.Sleep,
		},
	}
	out, runErr := r.run(ctx)
	if err := trainerlib.Finish(ctx, cfg.ExportTimeout, tel.logs.Provider.Shutdown, runErr, sink); err != nil {
		return fmt.Errorf("evaluation %s to %s: %w", trainerlib.Identity(cfg.runKey, cfg.runID), cfg.Endpoint, err)
	}

	m := newManifest(cfg, r.eval, out, tel.logs.Records())
	if cfg.manifest != "" {
		if err := writeManifest(cfg.manifest, m); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "evalrunner: evaluation %s: %d episodes (%d failed) of %d examples, %d summary keys, %s; %d log records sent to %s\n",
		trainerlib.Identity(cfg.runKey, cfg.runID), m.Counts.Episodes, m.Counts.Failed, m.Counts.Examples, len(out.summary),
		trainerlib.EndText(out.status), m.Counts.LogRecords, cfg.Endpoint)
	return nil
}
