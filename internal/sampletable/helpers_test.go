package sampletable

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/testkit/pdatajson"
)

// testNow is the clock reading the tests hand to FromRecord.
func testNow() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 891234567, time.UTC) }

// jsonValue builds a pdata value from JSON text, keeping the text's key
// order (pcommon.Map.FromRaw of a Go map would not) and its ints as ints.
func jsonValue(tb testing.TB, s string) pcommon.Value {
	tb.Helper()
	v, err := decodeValue(s)
	if err != nil {
		tb.Fatalf("test JSON: %v", err)
	}
	return v
}

// decodeValue is jsonValue for text that may not be JSON.
func decodeValue(s string) (pcommon.Value, error) { return pdatajson.Decode(s) }

// attrs builds a record's attributes from key, value pairs; a string value
// that starts with "json:" is the pdata value of the JSON text after it.
func attrs(tb testing.TB, kv ...any) pcommon.Map {
	tb.Helper()
	m := pcommon.NewMap()
	for i := 0; i < len(kv); i += 2 {
		k := kv[i].(string)
		if s, ok := kv[i+1].(string); ok && strings.HasPrefix(s, "json:") {
			jsonValue(tb, strings.TrimPrefix(s, "json:")).CopyTo(m.PutEmpty(k))
			continue
		}
		if err := m.PutEmpty(k).FromRaw(kv[i+1]); err != nil {
			tb.Fatalf("attribute %s: %v", k, err)
		}
	}
	return m
}

// trainAttrs are the work attributes of a train episode dispatched at step,
// plus kv.
func trainAttrs(tb testing.TB, step int64, kv ...any) pcommon.Map {
	tb.Helper()
	return attrs(tb, append([]any{"prime.work.step", step}, kv...)...)
}

// fromRecord maps a record with the test clock and no timestamps.
func fromRecord(tb testing.TB, a pcommon.Map, body pcommon.Value) (Record, error) {
	tb.Helper()
	return FromRecord(a, body, 0, 0, testNow())
}

// mustFromRecord is fromRecord for records that map.
func mustFromRecord(tb testing.TB, a pcommon.Map, body pcommon.Value) Record {
	tb.Helper()
	rec, err := fromRecord(tb, a, body)
	if err != nil {
		tb.Fatalf("FromRecord: %v", err)
	}
	return rec
}

// mustRow is the one row of a record that maps.
func mustRow(tb testing.TB, a pcommon.Map, body pcommon.Value) Episode {
	tb.Helper()
	rec := mustFromRecord(tb, a, body)
	if len(rec.Rows) != 1 || rec.Eval {
		tb.Fatalf("got %d rows (eval %v), want one", len(rec.Rows), rec.Eval)
	}
	return rec.Rows[0]
}

// render prints every column of ep, nulls as <nil>, for comparisons whose
// failures read well.
func render(ep Episode) string {
	var b strings.Builder
	line := func(name string, v any) {
		b.WriteString(name)
		b.WriteString("=")
		switch v := v.(type) {
		case *string:
			if v == nil {
				b.WriteString("<nil>")
			} else {
				b.WriteString(strconv.Quote(*v))
			}
		case *int64:
			if v == nil {
				b.WriteString("<nil>")
			} else {
				b.WriteString(strconv.FormatInt(*v, 10))
			}
		case *float64:
			if v == nil {
				b.WriteString("<nil>")
			} else {
				b.WriteString(strconv.FormatFloat(*v, 'g', -1, 64))
			}
		default:
			fmt.Fprintf(&b, "%#v", v)
		}
		b.WriteString("\n")
	}
	line("Step", ep.Step)
	line("Part", ep.Part)
	line("Tag", ep.Tag)
	line("ProblemID", ep.ProblemID)
	line("Prompt", ep.Prompt)
	line("Completion", ep.Completion)
	line("Trajectory", ep.Trajectory)
	line("Answer", ep.Answer)
	line("EnvName", ep.EnvName)
	line("Task", ep.Task)
	line("Info", ep.Info)
	line("Reward", ep.Reward)
	line("Advantage", ep.Advantage)
	line("Metrics", ep.Metrics)
	line("Timing", ep.Timing)
	line("NumInputTokens", ep.NumInputTokens)
	line("NumOutputTokens", ep.NumOutputTokens)
	line("CreatedAt", ep.CreatedAt.Format(time.RFC3339Nano)+" "+ep.CreatedAt.Location().String())
	line("Size", ep.Size)
	return b.String()
}

func checkEpisode(tb testing.TB, got, want Episode) {
	tb.Helper()
	if g, w := render(got), render(want); g != w {
		tb.Fatalf("episode:\n got:\n%s\nwant:\n%s", g, w)
	}
}
