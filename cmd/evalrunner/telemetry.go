package main

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/primeintellect/primeexporter/cmd/internal/trainerlib"
)

// instrumentationScope names the logger.
const instrumentationScope = "github.com/primeintellect/primeexporter/cmd/evalrunner"

// Sampling of the simulated model, part of the evaluation's config.
const (
	temperature = 1.0
	maxTokens   = 512
)

// maxRequestBytes keeps one OTLP request well under the collector receiver's
// default max_request_body_size (20 MiB) when episodes are large.
const maxRequestBytes = 16 << 20

// telemetry owns the run's logger provider and what it exported.
type telemetry struct {
	logs *trainerlib.Logs
	// reported holds the errors of exports the processor started on its
	// own (a request's worth of records was queued); flush returns them.
	reported *trainerlib.ErrorSink
}

// newResource describes the evaluation the way the exporter reads it
// (docs/evals.md, "What to send"; docs/telemetry.md section 1).
func newResource(ctx context.Context, cfg config) (*resource.Resource, error) {
	evalConfig, err := json.Marshal(map[string]any{
		"seed":                 cfg.Seed,
		"num_examples":         (cfg.episodes + cfg.rolloutsPerExample - 1) / cfg.rolloutsPerExample,
		"rollouts_per_example": cfg.rolloutsPerExample,
		"environments":         cfg.environments,
		"sampling":             map[string]any{"temperature": temperature, "max_tokens": maxTokens},
	})
	if err != nil {
		return nil, err
	}
	attrs := []attribute.KeyValue{
		attribute.String("service.name", "evalrunner"),
		attribute.String("prime.run.kind", "eval"),
		attribute.String("prime.run.model", cfg.model),
		attribute.StringSlice("prime.run.environments", cfg.environments),
		attribute.String("prime.run.config", string(evalConfig)),
		attribute.StringSlice("prime.eval.tags", cfg.tags),
	}
	optional := []struct{ key, value string }{
		{"prime.run.key", cfg.runKey},
		{"prime.run.id", cfg.runID},
		{"prime.run.name", cfg.name},
		{"prime.run.team_id", cfg.teamID},
		{"prime.eval.framework", cfg.framework},
		{"prime.eval.description", cfg.description},
	}
	for _, a := range optional {
		if a.value != "" {
			attrs = append(attrs, attribute.String(a.key, a.value))
		}
	}
	return trainerlib.NewResource(ctx, attrs...)
}

// recordsPerRequest bounds one export so that a request of large episodes
// stays under maxRequestBytes; small ones go out a whole batch at a time.
func recordsPerRequest(cfg config) int {
	perEpisode := cfg.episodeBytes + 8<<10 // the document around the messages
	return max(1, min(cfg.batch, maxRequestBytes/perEpisode))
}

// newTelemetry builds the logger provider against cfg.Endpoint. Nothing is
// sent until the first flush, or until a request's worth of records waits.
func newTelemetry(ctx context.Context, cfg config, reported *trainerlib.ErrorSink) (*telemetry, error) {
	res, err := newResource(ctx, cfg)
	if err != nil {
		return nil, err
	}
	// A batch's records are flushed with the batch, and the queue holds
	// more than a batch so that none is ever dropped.
	logs, err := trainerlib.NewLogs(ctx, cfg.Endpoint, cfg.ExportTimeout, res,
		sdklog.WithMaxQueueSize(max(2048, 2*(cfg.batch+2))),
		sdklog.WithExportMaxBatchSize(recordsPerRequest(cfg)),
	)
	if err != nil {
		return nil, err
	}
	return &telemetry{logs: logs, reported: reported}, nil
}

// flush exports everything recorded so far. It also fails when an export
// the processor started since the last flush failed: with large episodes a
// batch goes out in several requests, and only the last is the flush's own.
func (t *telemetry) flush(ctx context.Context) error {
	if err := t.logs.Provider.ForceFlush(ctx); err != nil {
		return err
	}
	return t.reported.TakeNew()
}
