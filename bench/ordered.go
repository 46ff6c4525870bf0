package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// A JSON value that keeps its object keys in the order it was read, so a
// document written back has the same layout a Python json.dumps gave it:
// an object is an ordered list of members, an array []any, a number a
// json.Number, and strings, bools and null as encoding/json has them.
type (
	object []member
	member struct {
		key   string
		value any
	}
)

// get is the value of key, nil when absent.
func (o object) get(key string) any {
	for _, m := range o {
		if m.key == key {
			return m.value
		}
	}
	return nil
}

// set replaces the value of key where it is, or appends it.
func (o *object) set(key string, v any) {
	for i := range *o {
		if (*o)[i].key == key {
			(*o)[i].value = v
			return
		}
	}
	*o = append(*o, member{key, v})
}

// readOrdered decodes one JSON value, objects as object.
func readOrdered(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := readValue(d)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("text after the JSON value")
	}
	return v, nil
}

func readValue(d *json.Decoder) (any, error) {
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t {
	case json.Delim('{'):
		o := object{}
		for d.More() {
			k, err := d.Token()
			if err != nil {
				return nil, err
			}
			v, err := readValue(d)
			if err != nil {
				return nil, err
			}
			o = append(o, member{k.(string), v})
		}
		_, err := d.Token() // }
		return o, err
	case json.Delim('['):
		a := []any{}
		for d.More() {
			v, err := readValue(d)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := d.Token() // ]
		return a, err
	}
	return t, nil
}

// clone is a deep copy of v, so that each episode changes its own.
func clone(v any) any {
	switch v := v.(type) {
	case object:
		o := make(object, len(v))
		for i, m := range v {
			o[i] = member{m.key, clone(m.value)}
		}
		return o
	case []any:
		a := make([]any, len(v))
		for i, e := range v {
			a[i] = clone(e)
		}
		return a
	}
	return v
}

// writeOrdered appends v as compact JSON, objects' members in order;
// values of other Go types (the shape's new arrays) as encoding/json
// writes them.
func writeOrdered(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case object:
		b.WriteByte('{')
		for i, m := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(jsonText(m.key))
			b.WriteByte(':')
			writeOrdered(b, m.value)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeOrdered(b, e)
		}
		b.WriteByte(']')
	case json.Number:
		b.WriteString(string(v))
	default:
		b.WriteString(jsonText(v))
	}
}
