package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/primeintellect/primeexporter/cmd/internal/trainerlib"
)

// run plays the run, flushes, and prints a one-line summary to stdout. It
// fails if any telemetry was not delivered.
func run(ctx context.Context, cfg config, stdout io.Writer, sink *trainerlib.ErrorSink) error {
	tel, err := newTelemetry(ctx, cfg)
	if err != nil {
		return fmt.Errorf("setting up OTLP exporters for %s: %w", cfg.Endpoint, err)
	}
	in, err := newInstruments(tel.meters.Meter(instrumentationScope))
	if err != nil {
		return errors.Join(err, tel.shutdown(context.WithoutCancel(ctx)))
	}
	t := trainer{
		cfg: cfg,
		in:  in,
		play: trainerlib.Play{
			Events: trainerlib.Events{Logger: tel.logs.Provider.Logger(instrumentationScope), Now: time.Now},
			Flush:  tel.flush,
			Sleep:  trainerlib.Sleep,
		},
	}
	out, runErr := t.run(ctx)
	if err := trainerlib.Finish(ctx, cfg.ExportTimeout, tel.shutdown, runErr, sink); err != nil {
		return fmt.Errorf("run %s to %s: %w", trainerlib.Identity(cfg.runKey, cfg.runID), cfg.Endpoint, err)
	}

	if cfg.manifest != "" {
		if err := writeManifest(cfg.manifest, out); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "demotrainer: run %s: %d steps, %d metric points, %d episodes (%d eval), %d log records, %s; sent to %s\n",
		trainerlib.Identity(cfg.runKey, cfg.runID), out.steps, tel.metricPoints.Load(), out.episodes, out.evalEpisodes, tel.logs.Records(),
		trainerlib.EndText(out.status), cfg.Endpoint)
	return nil
}
