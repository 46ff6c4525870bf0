package stepmetrics

import (
	"math"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestFormatKeyFoldsTheOtherAttributesSortedAndEscaped(t *testing.T) {
	tests := []struct {
		name  string
		build func(m pcommon.Map)
		want  string
	}{
		{"a point with no attributes keeps the bare name",
			func(pcommon.Map) {}, "loss"},
		{"prime.step is never folded in",
			func(m pcommon.Map) { m.PutInt("prime.step", 3) }, "loss"},
		{"one string attribute is folded in as it is",
			func(m pcommon.Map) { m.PutStr("env", "gsm8k") }, "loss{env=gsm8k}"},
		{"attribute keys are sorted",
			func(m pcommon.Map) { m.PutStr("z", "1"); m.PutStr("a", "2"); m.PutInt("prime.step", 1) }, "loss{a=2,z=1}"},
		{"structural characters are escaped in keys and values",
			func(m pcommon.Map) { m.PutStr(`a,b=c`, `x{y}\z`) }, `loss{a\,b\=c=x\{y\}\\z}`},
		{"an int is decimal",
			func(m pcommon.Map) { m.PutInt("rank", -12) }, "loss{rank=-12}"},
		{"a small double is in shortest round-trip form",
			func(m pcommon.Map) { m.PutDouble("lr", 1e-6) }, "loss{lr=1e-06}"},
		{"a plain double is in shortest round-trip form",
			func(m pcommon.Map) { m.PutDouble("temp", 0.5) }, "loss{temp=0.5}"},
		{"an integral double has no fraction",
			func(m pcommon.Map) { m.PutDouble("temp", 2) }, "loss{temp=2}"},
		{"a bool is true or false",
			func(m pcommon.Map) { m.PutBool("eval", true); m.PutBool("greedy", false) }, "loss{eval=true,greedy=false}"},
		{"a list is compact JSON with its commas escaped",
			func(m pcommon.Map) {
				s := m.PutEmptySlice("tags")
				s.AppendEmpty().SetStr("a")
				s.AppendEmpty().SetInt(1)
			}, `loss{tags=["a"\,1]}`},
		{"a map is compact JSON with sorted keys and escaped structure",
			func(m pcommon.Map) {
				mm := m.PutEmptyMap("cfg")
				mm.PutInt("b", 2)
				mm.PutStr("a", "<x&y>")
			}, `loss{cfg=\{"a":"<x&y>"\,"b":2\}}`},
		{"a non-finite double inside a map or list is null, as JSON.stringify writes it",
			func(m pcommon.Map) {
				m.PutEmptyMap("cfg").PutDouble("x", math.NaN())
				s := m.PutEmptySlice("lims")
				s.AppendEmpty().SetDouble(math.Inf(-1))
				s.AppendEmpty().SetDouble(math.Inf(1))
			}, `loss{cfg=\{"x":null\},lims=[null\,null]}`},
		{"a non-finite double attribute keeps its plain form",
			func(m pcommon.Map) { m.PutDouble("lr", math.NaN()) }, "loss{lr=NaN}"},
		{"maps inside lists and maps are sorted too",
			func(m pcommon.Map) {
				s := m.PutEmptySlice("cfgs")
				mm := s.AppendEmpty().SetEmptyMap()
				mm.PutEmptyMap("z").PutInt("b", 1)
				mm.PutInt("a", 1)
			}, `loss{cfgs=[\{"a":1\,"z":\{"b":1\}\}]}`},
		{"bytes are standard base64",
			func(m pcommon.Map) { m.PutEmptyBytes("id").FromRaw([]byte{0xff, 0x00, 0x10}) }, "loss{id=/wAQ}"},
		{"an empty value is empty",
			func(m pcommon.Map) { m.PutEmpty("none") }, "loss{none=}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := pcommon.NewMap()
			tt.build(m)
			if got := FormatKey("loss", m); got != tt.want {
				t.Fatalf("FormatKey = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFormatKeyLeavesTheMetricNameAsTheTrainerWroteIt(t *testing.T) {
	m := pcommon.NewMap()
	m.PutStr("env", "gsm8k")
	if got, want := FormatKey("reward/mean{x}", m), "reward/mean{x}{env=gsm8k}"; got != want {
		t.Fatalf("FormatKey = %q, want %q", got, want)
	}
}
