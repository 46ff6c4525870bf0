package stepmetrics

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

func TestAnEvaluationsMetricsEventNeedsNoStep(t *testing.T) {
	attrs := pcommon.NewMap()
	body := pcommon.NewValueMap()
	body.Map().PutDouble("accuracy", 0.75)
	body.Map().PutInt("num_examples", 25)
	entries, rejected, _ := SummaryValues(attrs, body)
	if len(rejected) != 0 || len(entries) != 2 {
		t.Fatalf("entries %v, rejected %v", entries, rejected)
	}
	for _, e := range entries {
		if e.Step != 0 {
			t.Errorf("%s has step %d, want 0", e.Key, e.Step)
		}
	}

	_, rejected, _ = SummaryValues(pcommon.NewMap(), pcommon.NewValueEmpty())
	if len(rejected) != 1 || rejected[0].Err.Error() != "prime.metrics event carries no values" {
		t.Fatalf("an empty event: %v", rejected)
	}
}

func TestAnEvaluationsPointsNeedNoStep(t *testing.T) {
	rm := pmetric.NewResourceMetrics()
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	g := ms.AppendEmpty()
	g.SetName("accuracy")
	g.SetEmptyGauge().DataPoints().AppendEmpty().SetDoubleValue(0.5)
	for _, opts := range []Options{{StepMetric: "step"}, {StepMetric: "step", Stepless: true}} {
		entries, rejected, _ := FromResource(rm, opts)
		if opts.Stepless {
			if len(rejected) != 0 || len(entries) != 1 || entries[0].Key != "accuracy" || entries[0].Step != 0 {
				t.Fatalf("stepless: entries %v, rejected %v", entries, rejected)
			}
			continue
		}
		if len(rejected) != 1 || rejected[0].Reason != "no_step" {
			t.Fatalf("a training point without a step is no_step: %v", rejected)
		}
	}
}
