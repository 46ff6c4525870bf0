package ambient

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

func TestAResourceIsAmbientByItsMarkerOrWhenEveryScopeIsAHostOrScrapeReceivers(t *testing.T) {
	cases := []struct {
		name   string
		scopes []string
		marker any // nil: none
		want   bool
	}{
		{"hostmetrics", []string{hostScope}, nil, true},
		{"a prometheus scrape", []string{promScope}, nil, true},
		{"named already", []string{ScopeName}, nil, true},
		{"a trainer's SDK", []string{"trainer"}, nil, false},
		{"a trainer beside hostmetrics", []string{hostScope, "trainer"}, nil, false},
		{"no scopes", nil, nil, false},
		{"marked by its source", []string{"trainer"}, "gpu", true},
		{"marked true", []string{"trainer"}, true, true},
		{"marked false over a receiver's scope", []string{promScope}, false, false},
		{"marked \"false\"", []string{promScope}, "false", false},
		{"marked empty", []string{promScope}, "", false},
	}
	for _, c := range cases {
		rm := pmetric.NewResourceMetrics()
		for _, s := range c.scopes {
			rm.ScopeMetrics().AppendEmpty().Scope().SetName(s)
		}
		switch m := c.marker.(type) {
		case string:
			rm.Resource().Attributes().PutStr(AttrAmbient, m)
		case bool:
			rm.Resource().Attributes().PutBool(AttrAmbient, m)
		}
		if got := Is(rm); got != c.want {
			t.Errorf("%s: Is = %v, want %v", c.name, got, c.want)
		}
	}
}
