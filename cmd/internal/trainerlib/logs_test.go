package trainerlib_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/primeintellect/primeexporter/cmd/internal/trainerlib"
	"github.com/primeintellect/primeexporter/cmd/internal/trainerlib/otlptest"
)

func TestLogsGoOutOnAFlushWithTheResourceAndAreCounted(t *testing.T) {
	c := otlptest.NewCollector(t, 0)
	ep, err := trainerlib.ParseEndpoint(c.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := trainerlib.NewResource(ctx, attribute.String("prime.run.key", "k"))
	if err != nil {
		t.Fatal(err)
	}
	logs, err := trainerlib.NewLogs(ctx, ep, 2*time.Second, res)
	if err != nil {
		t.Fatal(err)
	}
	ev := trainerlib.Events{Logger: logs.Provider.Logger("test"), Now: time.Now}
	ev.Emit(ctx, trainerlib.EventMetrics, attribute.Value{}, attribute.Int64("prime.step", 1))
	ev.RunEnd(ctx, trainerlib.StatusCompleted, "")
	if n := len(c.Records()); n != 0 {
		t.Fatalf("%d records arrived before the flush", n)
	}
	if err := logs.Provider.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(c.Records()); n != 2 || logs.Records() != 2 {
		t.Fatalf("%d records arrived, %d counted; want 2", n, logs.Records())
	}
	for _, r := range c.Resources() {
		if r["prime.run.key"].GetStringValue() != "k" || r["telemetry.sdk.language"].GetStringValue() != "go" {
			t.Fatalf("resource %v, want the run key and the SDK's attributes", r)
		}
	}
	if err := logs.Provider.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestARejectedExportIsNotCounted(t *testing.T) {
	c := otlptest.NewCollector(t, http.StatusBadRequest)
	ep, _ := trainerlib.ParseEndpoint(c.URL)
	ctx := context.Background()
	res, _ := trainerlib.NewResource(ctx)
	logs, err := trainerlib.NewLogs(ctx, ep, 2*time.Second, res)
	if err != nil {
		t.Fatal(err)
	}
	trainerlib.Events{Logger: logs.Provider.Logger("test"), Now: time.Now}.RunEnd(ctx, trainerlib.StatusCompleted, "")
	if err := logs.Provider.ForceFlush(ctx); err == nil || logs.Records() != 0 {
		t.Fatalf("flush = %v with %d counted, want the 400 and none", err, logs.Records())
	}
	_ = logs.Provider.Shutdown(ctx)
}
