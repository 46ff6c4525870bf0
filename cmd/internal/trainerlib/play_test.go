package trainerlib

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/log/embedded"
)

// recordingLogger keeps every record emitted, in order.
type recordingLogger struct {
	embedded.Logger
	records []log.Record
}

func (l *recordingLogger) Emit(_ context.Context, r log.Record) { l.records = append(l.records, r) }

func (l *recordingLogger) Enabled(context.Context, log.EnabledParameters) bool { return true }

func fixedNow() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

// attrs are a record's attributes as strings.
func attrs(r log.Record) map[string]string {
	out := map[string]string{}
	r.WalkAttributes(func(kv attribute.KeyValue) bool {
		out[string(kv.Key)] = kv.Value.AsString()
		return true
	})
	return out
}

func TestARunEndsWithItsStatusAndIsFlushed(t *testing.T) {
	interrupt := errors.New("interrupted after step 2: context canceled")
	for _, tc := range []struct {
		name        string
		status      string
		reason      string
		interrupted error
		wantStatus  string
		wantAttrs   map[string]string // nil: no end event
	}{
		{"completed", StatusCompleted, "", nil, StatusCompleted, map[string]string{"prime.run.status": "completed"}},
		{"failed with its reason", StatusFailed, "OOM", nil, StatusFailed, map[string]string{"prime.run.status": "failed", "prime.run.error": "OOM"}},
		{"interrupted: cancelled with the interrupt", StatusCompleted, "", interrupt, StatusCancelled,
			map[string]string{"prime.run.status": "cancelled", "prime.run.error": interrupt.Error()}},
		{"none sends no end event", StatusNone, "", nil, StatusNone, nil},
		{"none stays none when interrupted", StatusNone, "", interrupt, StatusNone, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logger := &recordingLogger{}
			flushes := 0
			p := Play{Events: Events{Logger: logger, Now: fixedNow}, Flush: func(context.Context) error { flushes++; return nil }}
			status, err := p.End(context.Background(), tc.status, tc.reason, tc.interrupted, "flush at the end")
			if err != nil || status != tc.wantStatus || flushes != 1 {
				t.Fatalf("End = %q, %v after %d flushes; want %q, nil after 1", status, err, flushes, tc.wantStatus)
			}
			if tc.wantAttrs == nil {
				if len(logger.records) != 0 {
					t.Fatalf("%d records, want none", len(logger.records))
				}
				return
			}
			if len(logger.records) != 1 || logger.records[0].EventName() != EventRunEnd {
				t.Fatalf("records %v, want one prime.run.end", logger.records)
			}
			if got := attrs(logger.records[0]); !maps.Equal(got, tc.wantAttrs) {
				t.Fatalf("attributes %v, want %v", got, tc.wantAttrs)
			}
		})
	}
}

func TestAFailedFlushIsAnExportErrorNamingWhen(t *testing.T) {
	refused := errors.New("400 Bad Request")
	p := Play{Events: Events{Logger: &recordingLogger{}, Now: fixedNow}, Flush: func(context.Context) error { return refused }}
	_, err := p.End(context.Background(), StatusCompleted, "", nil, "flush at the end of the run")
	var exportErr *ExportError
	if !errors.As(err, &exportErr) || exportErr.During != "flush at the end of the run" || !errors.Is(err, refused) {
		t.Fatalf("err = %v, want an export error at the end of the run wrapping the 400", err)
	}
}

func TestEventsAreStampedAndTheObservedTimeOnlyWhenAsked(t *testing.T) {
	for _, stamp := range []bool{false, true} {
		logger := &recordingLogger{}
		Events{Logger: logger, Now: fixedNow, StampObserved: stamp}.Emit(context.Background(), EventMetrics, attribute.Value{})
		r := logger.records[0]
		if !r.Timestamp().Equal(fixedNow()) || r.Severity() != log.SeverityInfo || r.SeverityText() != "INFO" {
			t.Errorf("record %v: want the time, severity INFO", r)
		}
		if got := r.ObservedTimestamp().Equal(fixedNow()); got != stamp {
			t.Errorf("StampObserved %v: observed time %v", stamp, r.ObservedTimestamp())
		}
		if r.Body().Type() != attribute.EMPTY {
			t.Errorf("an empty body was set: %v", r.Body())
		}
	}
}

func TestSleepWaitsOrReturnsTheInterrupt(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("Sleep = %v, want nil after the pause", err)
	}
	if err := Sleep(context.Background(), 0); err != nil {
		t.Fatalf("Sleep(0) = %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, d := range []time.Duration{0, time.Hour} {
		start := time.Now()
		if err := Sleep(ctx, d); !errors.Is(err, context.Canceled) || time.Since(start) > time.Minute {
			t.Fatalf("Sleep(%v) on a cancelled context = %v after %v, want context.Canceled at once", d, err, time.Since(start))
		}
	}
}

func TestFinishShutsDownAfterAnInterruptAndReportsWhatFailed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var sink ErrorSink
	sink.Handle(errors.New("async export failed"))
	var deadline time.Duration
	shutdown := func(ctx context.Context) error {
		if ctx.Err() != nil {
			t.Error("shutdown got the cancelled context")
		}
		d, ok := ctx.Deadline()
		if ok {
			deadline = time.Until(d)
		}
		return nil
	}
	err := Finish(ctx, time.Second, shutdown, context.Canceled, &sink)
	if deadline <= 2*time.Second || deadline > 3*time.Second {
		t.Errorf("shutdown had %v, want three export timeouts", deadline)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the interrupt", err)
	}
	var exportErr *ExportError
	if !errors.As(err, &exportErr) || exportErr.During != "reported by the OTel SDK" {
		t.Fatalf("err = %v, want the reported error as an export error", err)
	}
}
