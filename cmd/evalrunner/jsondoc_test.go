package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// parseJSON decodes JSON into a document, keeping key order: a number with a
// fraction or an exponent is a float64, any other an int.
func parseJSON(t *testing.T, raw []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	v, err := parseValue(d)
	if err != nil {
		t.Fatalf("parsing %.200s: %v", raw, err)
	}
	if d.More() {
		t.Fatalf("trailing data after %.200s", raw)
	}
	return v
}

func parseValue(d *json.Decoder) (any, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '{':
			o := object{}
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return nil, err
				}
				v, err := parseValue(d)
				if err != nil {
					return nil, err
				}
				o = append(o, member{k.(string), v})
			}
			_, err := d.Token()
			return o, err
		case '[':
			l := []any{}
			for d.More() {
				v, err := parseValue(d)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			_, err := d.Token()
			return l, err
		}
		return nil, fmt.Errorf("unexpected %v", tok)
	case json.Number:
		if strings.ContainsAny(string(tok), ".eE") {
			return tok.Float64()
		}
		n, err := tok.Int64()
		return int(n), err
	default:
		return tok, nil // string, bool or nil
	}
}

// fromAnyValue turns a received OTLP value back into a document, keeping the
// order the keys arrived in.
func fromAnyValue(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case nil:
		return nil
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return int(x.IntValue)
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_ArrayValue:
		l := []any{}
		for _, e := range x.ArrayValue.GetValues() {
			l = append(l, fromAnyValue(e))
		}
		return l
	case *commonpb.AnyValue_KvlistValue:
		o := object{}
		for _, kv := range x.KvlistValue.GetValues() {
			o = append(o, member{kv.GetKey(), fromAnyValue(kv.GetValue())})
		}
		return o
	}
	return fmt.Sprintf("unexpected %T", v.GetValue())
}

// sortedKeys is v with every object's keys sorted, as the Go SDK sends a map.
func sortedKeys(v any) any {
	switch v := v.(type) {
	case object:
		o := make(object, len(v))
		for i, m := range v {
			o[i] = member{m.key, sortedKeys(m.value)}
		}
		// A stable insertion sort keeps this free of imports.
		for i := 1; i < len(o); i++ {
			for j := i; j > 0 && o[j].key < o[j-1].key; j-- {
				o[j], o[j-1] = o[j-1], o[j]
			}
		}
		return o
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = sortedKeys(e)
		}
		return l
	}
	return v
}

func TestJSONTextKeepsOrderAndTellsIntsFromFloats(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  any
		want string
	}{
		{"keys stay in declaration order", obj("z", 1, "a", 2, "m", obj("y", nil, "b", true)), `{"z":1,"a":2,"m":{"y":null,"b":true}}`},
		{"an integral float keeps its point", obj("score", 1.0, "idx", 7), `{"score":1.0,"idx":7}`},
		{"floats are in shortest form", []any{0.5, 1755800000.1, 1e-7, -0.05, 1e21}, `[0.5,1755800000.1,1e-07,-0.05,1e+21]`},
		{"empty lists and objects stay empty", obj("l", []any{}, "o", object{}), `{"l":[],"o":{}}`},
		{"strings are escaped", "a\"b\\c\nd\x01é", `"a\"b\\c\nd\u0001é"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(jsonText(tc.doc))
			if got != tc.want {
				t.Fatalf("jsonText = %s, want %s", got, tc.want)
			}
			if !json.Valid([]byte(got)) {
				t.Fatalf("%s is not valid JSON", got)
			}
		})
	}
}

func TestADocumentSurvivesAJSONRoundTrip(t *testing.T) {
	doc := obj("b", []any{1, 2.5, "x", nil, obj("k", false)}, "a", obj("z", 1.0, "y", object{}))
	if got := parseJSON(t, jsonText(doc)); !reflect.DeepEqual(got, doc) {
		t.Fatalf("JSON round trip = %#v, want %#v", got, doc)
	}
}
