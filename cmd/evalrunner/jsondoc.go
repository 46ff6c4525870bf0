package main

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
)

// A document is a JSON value that keeps its keys in declaration order, as
// pydantic's model_dump does: an object, a list ([]any), a string, an int,
// a float64, a bool, or nil (JSON null).
type object []member

type member struct {
	key   string
	value any
}

// obj builds an object from alternating keys and values.
func obj(kv ...any) object {
	if len(kv)%2 != 0 {
		panic("obj: odd number of arguments")
	}
	o := make(object, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		o = append(o, member{key: kv[i].(string), value: kv[i+1]})
	}
	return o
}

// get returns the value of key, or nil.
func (o object) get(key string) any {
	for _, m := range o {
		if m.key == key {
			return m.value
		}
	}
	return nil
}

// encodeJSON writes v as compact JSON, keys in order. A float is written as
// Python writes it (1.0, not 1), so that ints and floats stay apart.
func encodeJSON(buf *bytes.Buffer, v any) {
	switch v := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		buf.WriteString(strconv.FormatBool(v))
	case int:
		buf.WriteString(strconv.Itoa(v))
	case int64:
		buf.WriteString(strconv.FormatInt(v, 10))
	case float64:
		buf.WriteString(formatFloat(v))
	case string:
		writeJSONString(buf, v)
	case []any:
		buf.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				buf.WriteByte(',')
			}
			encodeJSON(buf, e)
		}
		buf.WriteByte(']')
	case object:
		buf.WriteByte('{')
		for i, m := range v {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeJSONString(buf, m.key)
			buf.WriteByte(':')
			encodeJSON(buf, m.value)
		}
		buf.WriteByte('}')
	default:
		panic(fmt.Sprintf("encodeJSON: unsupported %T", v))
	}
}

// jsonText is v as compact JSON.
func jsonText(v any) []byte {
	var buf bytes.Buffer
	encodeJSON(&buf, v)
	return buf.Bytes()
}

// formatFloat writes a finite float in shortest form with a decimal point or
// an exponent. The documents hold no NaN or ±Inf; they would be null.
func formatFloat(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "null"
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	s := strconv.FormatFloat(f, format, -1, 64)
	if format == 'f' && !bytes.ContainsRune([]byte(s), '.') {
		s += ".0"
	}
	return s
}

// writeJSONString writes s as a JSON string: quotes, backslashes and control
// characters escaped, everything else as UTF-8.
func writeJSONString(buf *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	buf.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				buf.WriteByte('\\')
				buf.WriteByte(c)
			case c == '\n':
				buf.WriteString(`\n`)
			case c == '\t':
				buf.WriteString(`\t`)
			case c == '\r':
				buf.WriteString(`\r`)
			case c < 0x20:
				buf.WriteString(`\u00`)
				buf.WriteByte(hex[c>>4])
				buf.WriteByte(hex[c&0xf])
			default:
				buf.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf.WriteString(`\ufffd`)
		} else {
			buf.WriteString(s[i : i+size])
		}
		i += size
	}
	buf.WriteByte('"')
}

// attrValue is v as an OTLP AnyValue through the SDK's attribute.Value: an
// object becomes a map (whose keys the SDK sorts), a list a slice, nil an
// empty value (JSON null to the exporter).
func attrValue(v any) attribute.Value {
	switch v := v.(type) {
	case nil:
		return attribute.Value{}
	case bool:
		return attribute.BoolValue(v)
	case int:
		return attribute.IntValue(v)
	case int64:
		return attribute.Int64Value(v)
	case float64:
		return attribute.Float64Value(v)
	case string:
		return attribute.StringValue(v)
	case []any:
		vals := make([]attribute.Value, len(v))
		for i, e := range v {
			vals[i] = attrValue(e)
		}
		return attribute.SliceValue(vals...)
	case object:
		kvs := make([]attribute.KeyValue, len(v))
		for i, m := range v {
			kvs[i] = attribute.KeyValue{Key: attribute.Key(m.key), Value: attrValue(m.value)}
		}
		return attribute.MapValue(kvs...)
	default:
		panic(fmt.Sprintf("attrValue: unsupported %T", v))
	}
}
