package runs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// keyed is the resource of a trainer that creates a run by key.
func keyed(key string) pcommon.Resource {
	res := pcommon.NewResource()
	res.Attributes().PutStr(AttrRunKey, key)
	return res
}

func TestTheHandBackLedgerForgetsDataThatCameBackOrThatExporterhelperDropped(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var h handBacks
	first := keyed("a")
	second := keyed("a")
	other := keyed("b")
	h.mark(first, "a", t0, time.Minute)
	h.mark(second, "a", t0.Add(30*time.Second), time.Minute)
	h.mark(other, "b", t0, time.Minute)
	assert.Equal(t, 2, h.waiting("a", t0, time.Minute))

	h.settle(first)
	assert.Equal(t, 1, h.waiting("a", t0, time.Minute), "the first came back")
	assert.Equal(t, 1, h.waiting("a", t0.Add(time.Minute+time.Second), time.Minute), "the second is younger than max_elapsed_time")
	assert.Zero(t, h.waiting("a", t0.Add(2*time.Minute), time.Minute), "then exporterhelper dropped it")
	assert.Zero(t, h.waiting("b", t0.Add(2*time.Minute), time.Minute))

	h.mark(first, "a", t0, 0)
	assert.Equal(t, 1, h.waiting("a", t0.Add(time.Hour), 0), "no max_elapsed_time: retried for ever")
	h.settle(keyed("a"))
	assert.Equal(t, 1, h.waiting("a", t0, 0), "data that was never handed back settles nothing")
}
