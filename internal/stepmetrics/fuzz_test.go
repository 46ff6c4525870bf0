package stepmetrics

import (
	"errors"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/primeintellect/primeexporter/internal/reject"
)

// FuzzFromResource feeds arbitrary OTLP metrics through the mapping: it must
// not panic, must never produce a non-finite entry nor a time row at time
// 0, and FilterRows must hand back exactly the points of the kept rows.
func FuzzFromResource(f *testing.F) {
	for _, rm := range fuzzSeeds(f) {
		md := pmetric.NewMetrics()
		rm.CopyTo(md.ResourceMetrics().AppendEmpty())
		b, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(md)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		md, err := (&pmetric.ProtoUnmarshaler{}).UnmarshalMetrics(b)
		if err != nil {
			return
		}
		for i := 0; i < md.ResourceMetrics().Len(); i++ {
			rm := md.ResourceMetrics().At(i)
			for _, opts := range []Options{defaultOptions(), {}} {
				checkResource(t, rm, opts)
			}
		}
	})
}

func checkResource(t *testing.T, rm pmetric.ResourceMetrics, opts Options) {
	entries, rejected, coerced := FromResource(rm, opts)
	for _, e := range entries {
		if math.IsNaN(e.Value) || math.IsInf(e.Value, 0) {
			t.Fatalf("non-finite entry %+v", e)
		}
		if e.TimeKeyed && (e.Time == 0 || e.Step != 0) {
			t.Fatalf("time-keyed entry %+v has no time, or a step", e)
		}
	}
	// A point's only coercion is its step, and it counts only with entries.
	for _, c := range coerced {
		if c != reject.NumberString {
			t.Fatalf("unexpected coercion %q of a data point", c)
		}
	}
	if len(coerced) > len(entries) {
		t.Fatalf("%d coercions for %d entries", len(coerced), len(entries))
	}
	for _, r := range rejected {
		switch r.Reason {
		case reject.NoStep, reject.BadStep, reject.NonFinite:
		default:
			t.Fatalf("unexpected rejection reason %q", r.Reason)
		}
		if r.Err == nil || r.Err.Error() == "" {
			t.Fatalf("rejection %+v has no message", r)
		}
	}
	for _, keep := range []func(Row) bool{
		func(Row) bool { return true },
		func(r Row) bool { return r.Step%2 == 0 && !r.TimeKeyed() },
		func(r Row) bool { return r.TimeKeyed() },
	} {
		dst := pmetric.NewMetrics()
		FilterRows(dst, rm, opts, keep)
		var got []Entry
		for i := 0; i < dst.ResourceMetrics().Len(); i++ {
			es, _, _ := FromResource(dst.ResourceMetrics().At(i), opts)
			got = append(got, es...)
		}
		var want []Entry
		for _, e := range entries {
			if keep(e.Row()) {
				want = append(want, e)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("entries of the filtered resource:\n got %s\nwant %s", lines(got), lines(want))
		}
	}
}

// fuzzSeeds are resources covering every metric type and step path.
func fuzzSeeds(tb testing.TB) []pmetric.ResourceMetrics {
	rm, ms := resource()
	num(tb, gauge(ms, "step"), 3, 10)
	num(tb, gauge(ms, "step"), 4, 20, "rank", 1)
	dbl(tb, sum(ms, "loss"), 0.5, 10, "env", "a,b")
	dbl(tb, sum(ms, "loss"), math.NaN(), 20)
	dbl(tb, gauge(ms, "kl"), 0.1, 30, "prime.step", 2.5)
	dbl(tb, gauge(ms, "kl"), 0.2, 35) // no step: the row of its time
	h := histogram(ms, "reward").AppendEmpty()
	h.SetTimestamp(10)
	h.SetCount(2)
	h.SetSum(1)
	h.SetMax(1)
	h.ExplicitBounds().FromRaw([]float64{0.5, 1})
	h.BucketCounts().FromRaw([]uint64{1, 1, 0})
	e := expHistogram(ms, "len").AppendEmpty()
	attrs(tb, e.Attributes(), "prime.step", int64(8), "cfg", map[string]any{"x": []any{1, "y"}})
	e.SetCount(1)
	e.SetSum(math.Inf(1))
	e.SetScale(-1)
	e.Positive().SetOffset(511) // the bound base^512 is +Inf
	e.Positive().BucketCounts().FromRaw([]uint64{1})
	s := summary(ms, "t").AppendEmpty()
	attrs(tb, s.Attributes(), "prime.step", int64(9))
	q := s.QuantileValues().AppendEmpty()
	q.SetQuantile(0.5)
	q.SetValue(2)
	// Steps as the OTel Python SDK sends numpy integers, and strings that
	// are no step.
	dbl(tb, gauge(ms, "entropy"), 0.3, 40, "prime.step", "20")
	dbl(tb, gauge(ms, "entropy"), 0.4, 50, "prime.step", "20.0")
	dbl(tb, gauge(ms, "entropy"), math.Inf(1), 60, "prime.step", "-3")
	return []pmetric.ResourceMetrics{rm, twoSteps(tb)}
}

// FuzzFormatKey checks that a key can always be read back: escaping makes
// distinct attribute sets give distinct keys.
func FuzzFormatKey(f *testing.F) {
	f.Add("loss", "env", "gsm8k", int64(1), 0.5, true)
	f.Add("reward/mean", `a,b=c`, `x{y}\z`, int64(-3), 1e-6, false)
	f.Add("", "", "", int64(0), math.NaN(), false)
	f.Add("a{b", "prime.step", "}", int64(math.MaxInt64), math.Inf(-1), true)
	f.Add("0", "\x89", "0", int64(1), 0.5, true) // invalid UTF-8 stays as it is
	f.Fuzz(func(t *testing.T, name, k, v string, i int64, d float64, b bool) {
		m := pcommon.NewMap()
		m.PutStr(k, v)
		m.PutInt("i", i)
		m.PutDouble("d", d)
		m.PutBool("b", b)
		m.PutEmptyMap("m").PutStr(v, k)
		want := map[string]string{}
		m.Range(func(key string, val pcommon.Value) bool {
			if key != stepAttribute {
				want[key] = plainValue(val)
			}
			return true
		})
		key := FormatKey(name, m)
		if !strings.HasPrefix(key, name) {
			t.Fatalf("key %q does not start with the name %q", key, name)
		}
		got, ok := unfold(key[len(name):])
		if !ok {
			t.Fatalf("key %q does not read back", key)
		}
		var keys []string
		for _, p := range got {
			keys = append(keys, p[0])
			if want[p[0]] != p[1] {
				t.Fatalf("key %q: attribute %q reads back as %q, want %q", key, p[0], p[1], want[p[0]])
			}
		}
		if !sort.StringsAreSorted(keys) || len(keys) != len(want) {
			t.Fatalf("key %q: attributes %q, want the sorted keys of %v", key, keys, want)
		}
	})
}

// unfold reads `{k=v,…}` back into its unescaped pairs.
func unfold(s string) ([][2]string, bool) {
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return nil, false
	}
	var pairs [][2]string
	var cur strings.Builder
	var pair [2]string
	inValue := false
	escaped := false
	body := s[1:]
	for i := 0; i < len(body); i++ {
		r := body[i]
		switch {
		case escaped:
			cur.WriteByte(r)
			escaped = false
		case r == '\\':
			escaped = true
		case r == '=' && !inValue:
			pair[0], inValue = cur.String(), true
			cur.Reset()
		case (r == ',' || r == '}') && inValue:
			pair[1], inValue = cur.String(), false
			pairs = append(pairs, pair)
			cur.Reset()
			if r == '}' {
				return pairs, i == len(body)-1
			}
		case r == '{' || r == '}' || r == ',' || r == '=':
			return nil, false // an unescaped structural character out of place
		default:
			cur.WriteByte(r)
		}
	}
	return nil, false
}

// FuzzFromEvent feeds arbitrary bodies through the event mapping: no panic,
// every entry finite and of the event's step, and no more coercions than
// entries (one per value, and the step's only alongside one).
func FuzzFromEvent(f *testing.F) {
	f.Add(`{"loss": 0.5, "n": 3}`, int64(1))
	f.Add(`{"loss": 1e400}`, int64(2))
	f.Add(`{"a": {"b": [1, null]}, "": true}`, int64(-1))
	f.Add(`{"loss": 0.5,`, int64(0))
	f.Add("not json", int64(3))
	f.Add(`{"m/f32": "0.5", "n": "-3", "lr": "1e-06", "ok": false, "big": "1e400"}`, int64(20))
	f.Add(`{"a": "NaN", "b": "inf", "c": "", "d": " 1", "e": "01", "f": "+1", "g": ".5"}`, int64(4))
	f.Fuzz(func(t *testing.T, body string, step int64) {
		lr := plog.NewLogRecord()
		lr.Attributes().PutInt(stepAttribute, step)
		lr.Body().SetStr(body)
		entries, rejected, coerced := FromEvent(lr)
		for _, e := range entries {
			if e.Step != step || e.TimeKeyed || math.IsNaN(e.Value) || math.IsInf(e.Value, 0) {
				t.Fatalf("bad entry %+v for step %d", e, step)
			}
		}
		if len(entries) == 0 && len(rejected) == 0 {
			t.Fatalf("body %q gave neither entries nor rejections", body)
		}
		if len(coerced) > len(entries) {
			t.Fatalf("body %q gave %d coercions for %d entries", body, len(coerced), len(entries))
		}
	})
}

// FuzzNumberStrings checks that a string read as a number is one that
// strconv reads as the same number (so the JSON-grammar gate never lets
// through what the parse would then misread), and that a string read as a
// step is exactly that integer.
func FuzzNumberStrings(f *testing.F) {
	for _, s := range []string{"0.5", "-3", "1e-06", "20", "-0", "1e400", "NaN", "inf", "", " 1", "+1", ".5", "01", "1_000", "0x10", "20.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := pcommon.NewValueStr(s)
		if got, how, ok := readValue(v); ok {
			want, err := strconv.ParseFloat(s, 64)
			if how != reject.NumberString || (err != nil && !errors.Is(err, strconv.ErrRange)) || math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("readValue(%q) = %v, %q; strconv says %v, %v", s, got, how, want, err)
			}
		}
		if step, how, ok := readStep(v); ok {
			// A decimal integer without leading zeros prints back as itself;
			// "-0" is the one JSON integer that does not.
			if how != reject.NumberString || (strconv.FormatInt(step, 10) != s && s != "-0") {
				t.Fatalf("readStep(%q) = %d, %q", s, step, how)
			}
		}
	})
}
