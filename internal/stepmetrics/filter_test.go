package stepmetrics

import (
	"bytes"
	"reflect"
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

// twoSteps is a resource with steps 1 and 2, each told both ways: by
// prime.step and by the step gauge, plus a point with no step, in the row
// of its time (300), and one with neither a step nor a time.
func twoSteps(t testing.TB) pmetric.ResourceMetrics {
	rm, ms := resource()
	st := gauge(ms, "step")
	num(t, st, 1, 100)
	num(t, st, 2, 200)
	loss := gauge(ms, "loss")
	dbl(t, loss, 0.9, 100)
	dbl(t, loss, 0.8, 200)
	dbl(t, loss, 0.7, 300) // no step: the row of time 300
	dbl(t, loss, 0.6, 0)   // neither: never handed back
	dp := histogram(ms, "reward").AppendEmpty()
	attrs(t, dp.Attributes(), "prime.step", int64(2), "env", "a")
	dp.SetCount(2)
	other := rm.ScopeMetrics().AppendEmpty()
	other.Scope().SetName("eval")
	dbl(t, gauge(other.Metrics(), "acc"), 0.5, 100, "prime.step", 1)
	return rm
}

func TestFilterRowsKeepsOnlyTheWantedSteps(t *testing.T) {
	tests := []struct {
		name       string
		keep       func(Row) bool
		want       []stepValue
		wantScopes []string
		wantPoints int
	}{
		{"keeping step 2 keeps its points and its step gauge point, and drops a scope left empty",
			func(r Row) bool { return r == Row{Step: 2} },
			[]stepValue{{2, "step", 2}, {2, "loss", 0.8}, {2, "reward{env=a}/count", 2}},
			[]string{"trainer"}, 3},
		{"keeping step 1 drops the histogram left empty",
			func(r Row) bool { return r == Row{Step: 1} },
			[]stepValue{{1, "step", 1}, {1, "loss", 0.9}, {1, "acc", 0.5}},
			[]string{"trainer", "eval"}, 3},
		{"keeping every step drops the time row and the point with neither a step nor a time",
			func(r Row) bool { return !r.TimeKeyed() },
			[]stepValue{{1, "step", 1}, {2, "step", 2}, {1, "loss", 0.9}, {2, "loss", 0.8}, {2, "reward{env=a}/count", 2}, {1, "acc", 0.5}},
			[]string{"trainer", "eval"}, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rm := twoSteps(t)
			before := protoOf(t, rm)

			dst := pmetric.NewMetrics()
			FilterRows(dst, rm, defaultOptions(), tt.keep)

			if dst.ResourceMetrics().Len() != 1 {
				t.Fatalf("got %d resources, want 1", dst.ResourceMetrics().Len())
			}
			got := dst.ResourceMetrics().At(0)
			if !reflect.DeepEqual(got.Resource().Attributes().AsRaw(), rm.Resource().Attributes().AsRaw()) {
				t.Errorf("resource attributes = %v, want %v", got.Resource().Attributes().AsRaw(), rm.Resource().Attributes().AsRaw())
			}
			var scopes []string
			for i := 0; i < got.ScopeMetrics().Len(); i++ {
				scopes = append(scopes, got.ScopeMetrics().At(i).Scope().Name())
			}
			if !reflect.DeepEqual(scopes, tt.wantScopes) {
				t.Errorf("scopes = %v, want %v", scopes, tt.wantScopes)
			}
			entries, rejected, _ := FromResource(got, defaultOptions())
			assertMapping(t, entries, rejected, tt.want, nil)
			if dst.DataPointCount() != tt.wantPoints {
				t.Errorf("kept %d points, want %d", dst.DataPointCount(), tt.wantPoints)
			}
			if !bytes.Equal(protoOf(t, rm), before) {
				t.Errorf("the source resource was changed")
			}
		})
	}
}

// protoOf is rm's wire form, to tell whether rm changed.
func protoOf(t *testing.T, rm pmetric.ResourceMetrics) []byte {
	t.Helper()
	md := pmetric.NewMetrics()
	rm.CopyTo(md.ResourceMetrics().AppendEmpty())
	b, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(md)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFilterRowsHandsBackAPointWithNoStepAsTheRowOfItsTime(t *testing.T) {
	dst := pmetric.NewMetrics()
	FilterRows(dst, twoSteps(t), defaultOptions(), func(r Row) bool { return r == Row{Time: 300} })
	if dst.DataPointCount() != 1 {
		t.Fatalf("kept %d points, want the one of time 300", dst.DataPointCount())
	}
	entries, rejected, _ := FromResource(dst.ResourceMetrics().At(0), defaultOptions())
	assertEntries(t, entries, rejected, []Entry{timed("loss", 0.7, 300)}, nil)
}

func TestFilterRowsAppendsNothingWhenNothingIsKept(t *testing.T) {
	dst := pmetric.NewMetrics()
	FilterRows(dst, twoSteps(t), defaultOptions(), func(Row) bool { return false })
	if dst.ResourceMetrics().Len() != 0 {
		t.Fatalf("got %d resources, want none", dst.ResourceMetrics().Len())
	}
}

func TestFilterRowsAppendsAfterWhatDstAlreadyHolds(t *testing.T) {
	dst := pmetric.NewMetrics()
	FilterRows(dst, twoSteps(t), defaultOptions(), func(r Row) bool { return r == Row{Step: 1} })
	FilterRows(dst, twoSteps(t), defaultOptions(), func(r Row) bool { return r == Row{Step: 2} })
	if dst.ResourceMetrics().Len() != 2 {
		t.Fatalf("got %d resources, want 2", dst.ResourceMetrics().Len())
	}
}

func TestFilterRowsDropsWhatRetryingCannotFix(t *testing.T) {
	rm, ms := resource()
	dbl(t, gauge(ms, "orphan"), 0.5, 0) // neither a step nor a time
	dbl(t, gauge(ms, "loss"), 0.5, 1, "prime.step", "three")
	dbl(t, gauge(ms, "step"), 2.5, 1)
	dbl(t, gauge(ms, "kl"), 0.5, 1, "prime.step", 1).SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
	gauge(ms, "empty").AppendEmpty().Attributes().PutInt("prime.step", 1)
	dst := pmetric.NewMetrics()
	FilterRows(dst, rm, defaultOptions(), func(Row) bool { return true })
	if dst.ResourceMetrics().Len() != 0 {
		t.Fatalf("kept %d points, want none", dst.DataPointCount())
	}
}
