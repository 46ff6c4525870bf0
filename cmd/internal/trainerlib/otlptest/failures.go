package otlptest

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	logspb "go.opentelemetry.io/proto/otlp/logs/v1"

	"github.com/primeintellect/primeexporter/cmd/internal/trainerlib"
)

// CheckFailedDelivery runs a command against a collector that refuses every
// request and against one that is gone. Each run must fail and print no
// summary: a demo or test never passes on data that was not delivered. The
// refused run's error must be an export error naming the 400 and naming,
// where the first flush failed (e.g. "step 1").
func CheckFailedDelivery(t *testing.T, run func(c *Collector) (stdout string, err error), naming string) {
	t.Helper()
	t.Run("refused with a 400", func(t *testing.T) {
		out, err := run(NewCollector(t, http.StatusBadRequest))
		var exportErr *trainerlib.ExportError
		if !errors.As(err, &exportErr) {
			t.Fatalf("err = %v, want an export error", err)
		}
		if !strings.Contains(err.Error(), naming) || !strings.Contains(err.Error(), "400") {
			t.Errorf("error %q does not name %s and the 400", err, naming)
		}
		if out != "" {
			t.Errorf("printed a summary %q for a failed run", out)
		}
	})
	t.Run("the collector is gone", func(t *testing.T) {
		c := NewCollector(t, 0)
		c.Close()
		if out, err := run(c); err == nil || out != "" {
			t.Fatalf("a run against a closed port: %q, %v; want an error and no summary", out, err)
		}
	})
}

// CheckRunEnd checks that r is a prime.run.end event with status, and with
// reason as its prime.run.error, or with none when reason is "".
func CheckRunEnd(t *testing.T, r *logspb.LogRecord, status, reason string) {
	t.Helper()
	if r.GetEventName() != trainerlib.EventRunEnd {
		t.Fatalf("record %q, want %s", r.GetEventName(), trainerlib.EventRunEnd)
	}
	attrs := RecordAttrs(r)
	if got := attrs["prime.run.status"].GetStringValue(); got != status {
		t.Errorf("prime.run.status = %q, want %q", got, status)
	}
	got, hasReason := attrs["prime.run.error"]
	if reason == "" && hasReason {
		t.Errorf("prime.run.error = %v on a %s run, want none", got, status)
	}
	if got.GetStringValue() != reason {
		t.Errorf("prime.run.error = %q, want %q", got.GetStringValue(), reason)
	}
}
