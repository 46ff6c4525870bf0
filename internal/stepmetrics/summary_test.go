package stepmetrics

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
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
