package stepmetrics

import (
	"encoding/base64"
	"sort"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/pjson"
)

// FormatKey is the entry key of a data point: the metric name, with the
// point's other attributes (all but prime.step) folded in as
// name{k1=v1,k2=v2}, keys sorted, `\` `,` `=` `{` `}` escaped by a backslash
// in attribute keys and values. A point with no other attributes keeps the
// bare name. The name itself is not escaped: it is the trainer's own key.
func FormatKey(name string, attrs pcommon.Map) string {
	type attr struct {
		key string
		val pcommon.Value
	}
	var folded []attr
	attrs.Range(func(k string, v pcommon.Value) bool {
		if k != stepAttribute {
			folded = append(folded, attr{k, v})
		}
		return true
	})
	if len(folded) == 0 {
		return name
	}
	// Stable, so a map holding one key twice (pdata does not forbid it)
	// still gives one key per input.
	sort.SliceStable(folded, func(i, j int) bool { return folded[i].key < folded[j].key })
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, a := range folded {
		if i > 0 {
			b.WriteByte(',')
		}
		writeEscaped(&b, a.key)
		b.WriteByte('=')
		writeEscaped(&b, plainValue(a.val))
	}
	b.WriteByte('}')
	return b.String()
}

// writeEscaped writes s with the characters that structure a key escaped, so
// distinct attribute sets always give distinct keys. It goes byte by byte:
// the structural characters are ASCII, and a rune loop would turn every
// invalid UTF-8 byte into the same U+FFFD, merging distinct keys.
func writeEscaped(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\', ',', '=', '{', '}':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
}

// plainValue is an attribute value in the form a person would type it:
// a string as it is, an int in decimal, a double in its shortest round-trip
// form (NaN, +Inf), a bool as true/false, a list or map as compact JSON with
// sorted keys (pjson's rules, so NaN and ±Inf inside are null), bytes in
// standard base64 (what JSON and pdata's AsString give bytes), empty as "".
func plainValue(v pcommon.Value) string {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return v.Str()
	case pcommon.ValueTypeInt:
		return strconv.FormatInt(v.Int(), 10)
	case pcommon.ValueTypeDouble:
		return formatFloat(v.Double())
	case pcommon.ValueTypeBool:
		return strconv.FormatBool(v.Bool())
	case pcommon.ValueTypeBytes:
		return base64.StdEncoding.EncodeToString(v.Bytes().AsRaw())
	case pcommon.ValueTypeMap, pcommon.ValueTypeSlice:
		// Sorted, so a series keeps its key whatever order a producer put
		// the map's keys in.
		var sb pjson.Buffer
		pjson.WriteSorted(&sb, v)
		return sb.String()
	}
	return ""
}

// formatFloat is the shortest form that reads back as the same double.
func formatFloat(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
}
